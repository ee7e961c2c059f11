// Issue 16 through `yolocache-train` as a user runs it: --data takes a data YAML (built into a cache,
// then reused, then updated when a label changes), a cache whose source changed is a warning (refused
// with --strict-source), a damaged record stops training naming it, a folder-built cache trains, and
// Ultralytics' key=value arguments, clean --help and "did you mean" work as on `yolocache`.
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/build/builder.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

using testing::YolocacheTrain;


// One epoch at 64 px on one CPU thread: a few seconds.
std::vector<std::string> TinyTrain(const std::string& data, const fs::path& run) {
  return {"train", "--data", data, "--model", "yolov8n", "--imgsz", "64", "--epochs", "1", "--batch", "4", "--device",
          "cpu", "--threads", "1", "--torch-threads", "1", "--out", run.string()};
}

void AppendRow(const fs::path& label) {
  ASSERT_TRUE(fs::exists(label)) << label;
  std::ofstream(label, std::ios::app) << "1 0.5 0.5 0.2 0.2\n";
}

TEST(TrainDataCli, ADataYamlIsBuiltThenReusedThenUpdated) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  const fs::path caches = tmp / "caches", run = tmp / "run";
  // key=value throughout, as `yolo train` takes them (workers= is --threads, amp=False is --no-amp).
  CliRun t = YolocacheTrain(tmp, {"train", "data=" + yaml.string(), "model=yolov8n.yaml", "imgsz=64", "epochs=1", "batch=4",
                                  "device=cpu", "workers=1", "torch_threads=1", "amp=False", "out=" + run.string(),
                                  "cache_dir=" + caches.string()});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("data: built cache " + caches.string() + "/data-64-"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("epoch 1:"), std::string::npos) << t.out;
  std::vector<fs::path> built;
  for (const fs::directory_entry& e : fs::directory_iterator(caches)) built.push_back(e.path());
  ASSERT_EQ(built.size(), 1u);
  EXPECT_TRUE(fs::exists(built[0] / "manifest.json"));
  const std::string args = testing::ReadFile(run / "args.yaml");  // Ultralytics' keys (config/args_yaml.h)
  EXPECT_NE(args.find("\namp: false\n"), std::string::npos) << args;  // amp=False
  EXPECT_NE(args.find("\nworkers: 1\n"), std::string::npos) << args;  // workers=1
  EXPECT_NE(args.find("\nepochs: 1\n"), std::string::npos) << args;

  // No --imgsz: the checkpoint's (64), as `yolo val` takes it from the train args, so the cache built
  // at 64 is reused rather than another one built at 640.
  const std::vector<std::string> val = {"val", "--weights", (run / "weights" / "last.pt").string(), "--data",
                                        yaml.string(), "--cache-dir", caches.string(), "--device", "cpu",
                                        "--threads", "1", "--json"};
  CliRun v = YolocacheTrain(tmp, val);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("data: reusing cache " + built[0].string() + " (source unchanged"), std::string::npos) << v.err;
  const nlohmann::json vj = nlohmann::json::parse(v.out, nullptr, false);  // stdout: JSON only
  ASSERT_TRUE(vj.is_object()) << v.out;
  EXPECT_EQ(vj["imgsz"], 64);
  EXPECT_EQ(std::distance(fs::directory_iterator(caches), fs::directory_iterator()), 1);
  // An explicit size still wins: imgsz=96 builds (and runs on) its own cache.
  std::vector<std::string> val96 = val;
  val96.push_back("imgsz=96");
  CliRun v96 = YolocacheTrain(tmp, val96);
  ASSERT_EQ(v96.exit_code, 0) << v96.err;
  EXPECT_NE(v96.err.find("data: built cache " + caches.string() + "/data-96-"), std::string::npos) << v96.err;
  EXPECT_EQ(nlohmann::json::parse(v96.out, nullptr, false).value("imgsz", 0), 96) << v96.out;

  AppendRow(tmp / "data/labels/val/synth_000001.txt");
  v = YolocacheTrain(tmp, val);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("data: updated cache " + built[0].string() + " (1 changed (1 of them labels)"), std::string::npos)
      << v.err;

  // The cache itself as --data: checked against its source, which is unchanged now ...
  const std::vector<std::string> given = {"val", "--weights", (run / "weights" / "last.pt").string(), "--data",
                                          built[0].string(), "--device", "cpu", "--threads", "1", "--json"};
  v = YolocacheTrain(tmp, given);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("source unchanged since the build: 12 images and labels checked in"), std::string::npos) << v.err;
  // ... then a warning once a label changed, and a refusal (exit 1) with --strict-source.
  AppendRow(tmp / "data/labels/train/synth_000003.txt");
  v = YolocacheTrain(tmp, given);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("warning: the source changed since"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("labels/train/synth_000003.txt"), std::string::npos) << v.err;
  std::vector<std::string> strict = TinyTrain(built[0].string(), tmp / "run2");
  strict.push_back("--strict-source");
  CliRun s = YolocacheTrain(tmp, strict);
  EXPECT_EQ(s.exit_code, 1) << s.out << s.err;
  EXPECT_NE(s.err.find("error: the source changed since"), std::string::npos) << s.err;
  EXPECT_FALSE(fs::exists(tmp / "run2" / "weights"));
}

// A record damaged after the build: the first read of it in the run fails, naming shard and record.
TEST(TrainDataCli, ADamagedRecordStopsTrainingNamingIt) {
  TempDir tmp;
  BuildOptions b;
  b.source = testing::TinySynthDataset(tmp / "data");
  b.out = tmp / "cache";
  b.imgsz = 64;
  b.threads = 1;
  ASSERT_TRUE(BuildCache(b).ok());
  testing::FlipFirstRecordPixel(tmp / "cache/train-00000.shard");
  CliRun t = YolocacheTrain(tmp, TinyTrain((tmp / "cache").string(), tmp / "run"));
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
  EXPECT_NE(t.err.find("train-00000.shard: record 0"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("checksum"), std::string::npos) << t.err;
}

// Issue 16 #8: "the manifest names no classes" for a cache of a folder without a YAML.
TEST(TrainDataCli, AFolderBuiltCacheTrains) {
  TempDir tmp;
  testing::TinySynthDataset(tmp / "data");
  fs::remove(tmp / "data/data.yaml");
  BuildOptions b;
  b.source = tmp / "data";
  b.out = tmp / "cache";
  b.imgsz = 64;
  b.threads = 1;
  Result<BuildReport> r = BuildCache(b);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->names.empty());
  CliRun t = YolocacheTrain(tmp, TinyTrain((tmp / "cache").string(), tmp / "run"));
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_TRUE(fs::exists(tmp / "run" / "weights" / "last.pt"));
}

TEST(TrainDataCli, KeyValueHelpAndHints) {
  TempDir tmp;
  CliRun c = YolocacheTrain(tmp, {"ceiling", "model=yolov8n", "imgsz=64", "batch=2", "nc=3", "device=cpu",
                                  "synthetic_iters=1", "torch_threads=1", "json=True"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const nlohmann::json j = nlohmann::json::parse(c.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << c.out;
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["imgsz"], 64);
  EXPECT_EQ(j["nc"], 3);
  EXPECT_EQ(j["iterations"], 1);

  for (const char* cmd : {"train", "val", "predict", "ceiling"}) {
    CliRun h = YolocacheTrain(tmp, {cmd, "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_EQ(h.out.find("{false}"), std::string::npos) << cmd << ": " << h.out;
    EXPECT_EQ(h.out.find("{true}"), std::string::npos) << cmd << ": " << h.out;
  }
  CliRun th = YolocacheTrain(tmp, {"train", "--help"});
  for (const char* flag : {"--cache-dir", "--strict-source", "--no-val", "--no-channels-last"})
    EXPECT_NE(th.out.find(flag), std::string::npos) << flag;

  CliRun typo = YolocacheTrain(tmp, {"trian", "--data", "x"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'train'?"), std::string::npos) << typo.err;
  CliRun option = YolocacheTrain(tmp, {"train", "--data", "x", "--epoch", "3"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("did you mean '--epochs'"), std::string::npos) << option.err;
  CliRun key = YolocacheTrain(tmp, {"train", "data=x", "lr=0.1"});
  EXPECT_EQ(key.exit_code, 2);
  EXPECT_NE(key.err.find("for 'lr'"), std::string::npos) << key.err;  // some close option is named
}

}  // namespace
}  // namespace yc
