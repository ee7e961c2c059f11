// --threads / -j / threads= bounded at 0..kMaxThreads (libcache/base/thread_limit.h) in the `yolocache`
// commands and the libraries under them: 65,536 (TBB's arena limit) aborted bench with "terminate called
// recursively"; now exit 2 naming the option and the range, before any work (issue 25).
#include <gtest/gtest.h>

#include "libcache/base/thread_limit.h"
#include "libcache/build/builder.h"
#include "tests/bounded_run.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::CliRun;
using testing::TempDir;

TEST(ThreadBounds, YolocacheCommandsRefuseOutOfRangeThreads) {
  TempDir tmp;
  const std::string cache = (tmp / "none.yc").string();
  const std::vector<std::vector<std::string>> cases = {
      {"bench", cache, "--threads", "65536"},
      {"bench", cache, "threads=65536"},
      {"bench", cache, "--threads", "1025"},
      {"bench", cache, "--threads", "-1"},
      {"bench", cache, "--scaling", "1,65536"},
      {"build", (tmp / "data.yaml").string(), "--out", cache, "--threads", "65536"},
      {"build", (tmp / "data.yaml").string(), "--out", cache, "-j", "100000"},
      {"build", (tmp / "data.yaml").string(), "--out", cache, "threads=65536"},
  };
  for (const auto& args : cases) {
    SCOPED_TRACE(args[0] + " " + args.back());
    const CliRun r = testing::RunBounded("yolocache", tmp.path(), args, 60, uint64_t{4} << 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("must be 0 (all cores) .. 1024"), std::string::npos) << r.err;
    EXPECT_TRUE(r.err.find("--threads") != std::string::npos || r.err.find("--scaling") != std::string::npos) << r.err;
  }
}

TEST(ThreadBounds, BuilderRefusesOutOfRangeThreads) {
  // (The loader's ValidateOptions: python/tests/test_loader_sharing.py, through the Python Loader.)
  BuildOptions bo;
  bo.source = "/nonexistent/data.yaml";
  bo.out = "/nonexistent/out.yc";
  bo.threads = 100000;
  Result<BuildReport> built = BuildCache(bo);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(built.status().message().find("--threads must be 0 (all cores) .. 1024, got 100000"), std::string::npos);
}

}  // namespace
}  // namespace yc
