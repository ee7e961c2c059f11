// yolocache-train's --threads / --torch-threads / threads= / workers= bounded at 0..kMaxThreads
// (libcache/base/thread_limit.h): 65,536 made val hang and train hang ignoring SIGTERM; now exit 2 naming the
// option and the range, before any work (issue 25). Each run under a timeout.
#include <gtest/gtest.h>

#include "tests/bounded_run.h"
#include "tests/test_support.h"
#include "trainer/config/train_options.h"

namespace yc::trainer {
namespace {

using testing::CliRun;
using testing::TempDir;

TEST(ThreadBoundsCli, TrainValCeilingRefuseOutOfRangeThreads) {
  TempDir tmp;
  const std::string cache = (tmp / "none.yc").string();
  const std::string weights = (tmp / "none.pt").string();
  const std::vector<std::vector<std::string>> cases = {
      {"train", "--data", cache, "--model", "yolov8n", "--threads", "65536"},
      {"train", "data=" + cache, "model=yolov8n.yaml", "threads=65536"},
      {"train", "data=" + cache, "model=yolov8n.yaml", "workers=100000"},
      {"train", "--data", cache, "--model", "yolov8n", "--torch-threads", "65536"},
      {"train", "--data", cache, "--model", "yolov8n", "--threads", "-1"},
      {"val", "--weights", weights, "--data", cache, "--threads", "65536"},
      {"val", "weights=" + weights, "data=" + cache, "threads=1025"},
      {"ceiling", "--model", "yolov8n", "--threads", "65536"},
  };
  for (const auto& args : cases) {
    SCOPED_TRACE(args[0] + " " + args.back());
    const CliRun r = testing::RunBounded("yolocache-train", tmp.path(), args, 60, uint64_t{8} << 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("must be 0 (all cores) .. 1024"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("threads"), std::string::npos) << r.err;
  }
}

TEST(ThreadBoundsCli, TrainOptionsRefuseOutOfRangeThreads) {
  // What --resume takes from a checkpoint goes through the same check.
  TrainOptions o;
  o.data = "x.yc";
  o.model = "yolov8n";
  ASSERT_TRUE(ValidateTrainOptions(o).ok());
  o.threads = 65536;
  Status st = ValidateTrainOptions(o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--threads must be 0 (all cores) .. 1024, got 65536"), std::string::npos) << st.ToString();
  o.threads = 1024;
  o.torch_threads = 2000;
  st = ValidateTrainOptions(o);
  EXPECT_NE(st.message().find("--torch-threads must be 0 (all cores) .. 1024, got 2000"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace yc::trainer
