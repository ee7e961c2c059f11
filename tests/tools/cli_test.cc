// The `yolocache` binary as a user runs it: exit codes, --json documents, --help, and kill -9 in the
// middle of a build over an existing cache.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "libcache/synth.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  return testing::SpawnTool("yolocache", args, out, err);
}

CliRun Yolocache(const TempDir& tmp, const std::vector<std::string>& args) {
  return testing::RunTool("yolocache", tmp.path(), args);
}

void Synth(const fs::path& dir, int train, int corrupt) {
  SynthOptions o;
  o.train_images = train;
  o.val_images = 8;
  o.min_side = 64;
  o.max_side = 200;
  o.corrupt = corrupt;
  ASSERT_TRUE(GenerateSynthDataset(dir, o).ok());
}

TEST(Cli, EveryCommandHasHelp) {
  TempDir tmp;
  for (const char* cmd : {"synth", "build", "verify", "inspect"}) {
    CliRun r = Yolocache(tmp, {cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << cmd << ": " << r.out;
  }
}

TEST(Cli, UsageErrorsExitTwoAndMissingFilesExitThree) {
  TempDir tmp;
  EXPECT_EQ(Yolocache(tmp, {"build"}).exit_code, 2);
  EXPECT_EQ(Yolocache(tmp, {"no-such-command"}).exit_code, 2);
  CliRun r = Yolocache(tmp, {"verify", (tmp / "missing.yaml").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
}

TEST(Cli, VerifySourceJsonListsEveryProblemAndExitsOne) {
  TempDir tmp;
  Synth(tmp / "data", 16, 8);
  CliRun r = Yolocache(tmp, {"verify", (tmp / "data" / "data.yaml").string(), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"images", "ok", "backgrounds", "excluded", "boxes"}) EXPECT_TRUE(j["splits"]["train"].contains(key)) << key;
  EXPECT_EQ(j["splits"]["train"]["excluded"], 6);
  std::set<std::string> codes;
  for (const auto& p : j["problems"]) {
    for (const char* key : {"split", "file", "severity", "code", "message"}) EXPECT_TRUE(p.contains(key)) << key;
    codes.insert(p["code"].get<std::string>());
  }
  const std::set<std::string> expected = {"truncated", "empty-file", "label-columns", "label-class-out-of-range",
                                          "label-orphan", "unsupported-format", "duplicate-image", "label-out-of-range"};
  EXPECT_EQ(codes, expected);
  // Warnings alone pass unless --strict.
  Synth(tmp / "clean", 8, 0);
  EXPECT_EQ(Yolocache(tmp, {"verify", (tmp / "clean" / "data.yaml").string(), "-q"}).exit_code, 0);
}

TEST(Cli, BuildVerifyInspectOnACache) {
  TempDir tmp;
  Synth(tmp / "data", 16, 0);
  const std::string cache = (tmp / "cache").string();
  CliRun b = Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "96", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out)["records"], 24);
  CliRun v = Yolocache(tmp, {"verify", cache, "--json"});
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_TRUE(nlohmann::json::parse(v.out)["ok"].get<bool>());
  CliRun i = Yolocache(tmp, {"inspect", cache, "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  const nlohmann::json info = nlohmann::json::parse(i.out);
  EXPECT_EQ(info["splits"]["train"]["records"], 16);
  CliRun rec = Yolocache(tmp, {"inspect", cache, "--record", "3", "--out", (tmp / "r3.jpg").string()});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const std::string jpeg = testing::ReadFile(tmp / "r3.jpg");
  ASSERT_GT(jpeg.size(), 100u);
  EXPECT_EQ(static_cast<unsigned char>(jpeg[0]), 0xFF);
  EXPECT_EQ(static_cast<unsigned char>(jpeg[1]), 0xD8);
  EXPECT_EQ(Yolocache(tmp, {"inspect", cache, "--record", "999", "--out", (tmp / "x.jpg").string()}).exit_code, 2);
}

TEST(Cli, BenchIsDeterministicAcrossThreadCountsAndBeatsTheNaiveLoader) {
  TempDir tmp;
  Synth(tmp / "data", 24, 0);
  const std::string cache = (tmp / "cache").string();
  ASSERT_EQ(Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "128"}).exit_code, 0);
  std::set<std::string> checksums;
  for (const char* threads : {"1", "2", "8"}) {
    // One batch in flight: every timed batch but the first renders inside the timed window, so the
    // workers' figures below are never empty (batches do not depend on the prefetch depth).
    CliRun r = Yolocache(tmp, {"bench", cache, "--batch", "8", "--batches", "4", "--threads", threads, "--json",
                               "--prefetch", "1", "--profile-samples", "4", "--compare"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    for (const char* key : {"images_per_second", "threads", "images_per_second_per_thread", "checksum", "stages_ms_per_sample"})
      EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["threads"], std::stoi(threads));
    EXPECT_EQ(j["images"], 32);
    EXPECT_GT(j["naive_images_per_second"].get<double>(), 0.0);
    // Workers' own accounting: busy a fraction of the timed window, each sample split into its stages.
    const double busy = j["worker_busy_fraction"].get<double>();
    EXPECT_GT(busy, 0.0);
    EXPECT_LE(busy, 1.02);  // samples straddling the window count only their part inside it
    const nlohmann::json& ms = j["ms_per_sample"];
    EXPECT_GT(ms["render"].get<double>(), 0.0);
    EXPECT_GT(ms["finish"].get<double>(), 0.0);
    EXPECT_NEAR(ms["total"].get<double>(), ms["render"].get<double>() + ms["finish"].get<double>(),
                0.05 * ms["total"].get<double>() + 0.01);
    checksums.insert(j["checksum"].get<std::string>());
  }
  EXPECT_EQ(checksums.size(), 1u) << "batches must not depend on the thread count";
  // Nor on the instruction set (the AVX2 kernels give the AVX-512 kernels' bytes), nor on the
  // prefetch depth (this run keeps the default 4 in flight).
  setenv("YOLOCACHE_SIMD", "avx2", 1);
  CliRun avx2 = Yolocache(tmp, {"bench", cache, "--batch", "8", "--batches", "4", "--threads", "2", "--json"});
  unsetenv("YOLOCACHE_SIMD");
  ASSERT_EQ(avx2.exit_code, 0) << avx2.err;
  const nlohmann::json j2 = nlohmann::json::parse(avx2.out);
  EXPECT_NE(j2["simd"], "avx512");
  EXPECT_EQ(j2["checksum"], *checksums.begin());
  // Side by side: every round runs each thread count; efficiency is against the round's first count.
  // One batch in flight, so most timed batches' samples run inside the timed window (the clock probe
  // and ms_per_sample count samples finished in it).
  CliRun scaling = Yolocache(tmp, {"bench", cache, "--batch", "8", "--batches", "4", "--prefetch", "1", "--scaling",
                                   "1,2", "--rounds", "3", "--json"});
  ASSERT_EQ(scaling.exit_code, 0) << scaling.err;
  const nlohmann::json js = nlohmann::json::parse(scaling.out);
  ASSERT_EQ(js["rounds"].size(), 3u);
  for (const nlohmann::json& round : js["rounds"]) {
    ASSERT_EQ(round.size(), 2u);
    EXPECT_EQ(round[0]["threads"], 1);
    EXPECT_EQ(round[1]["threads"], 2);
    EXPECT_DOUBLE_EQ(round[0]["efficiency"].get<double>(), 1.0);
    EXPECT_GT(round[1]["images_per_second"].get<double>(), 0.0);
    const double one = round[0]["images_per_second"].get<double>(), two = round[1]["images_per_second"].get<double>();
    EXPECT_NEAR(round[1]["efficiency"].get<double>(), two / 2 / one, 1e-9);
    // Per cycle: the efficiency with the workers' clock change taken out (x86-64 probes the clock).
    const double ghz1 = round[0]["core_ghz"].get<double>(), ghz2 = round[1]["core_ghz"].get<double>();
    if (ghz1 > 0) {
      EXPECT_GT(ghz2, 0.0);
      EXPECT_DOUBLE_EQ(round[0]["cycle_efficiency"].get<double>(), 1.0);
      EXPECT_NEAR(round[1]["cycle_efficiency"].get<double>(), two / 2 / one * ghz1 / ghz2, 1e-9);
    }
  }
  ASSERT_EQ(js["median_efficiency"].size(), 2u);
  if (js.contains("median_core_ghz")) {
    EXPECT_GT(js["median_core_ghz"][1].get<double>(), 0.0);
    EXPECT_EQ(js["median_cycle_efficiency"].size(), 2u);
  }
  EXPECT_GT(js["median_images_per_second"][1].get<double>(), 0.0);
  CliRun bad = Yolocache(tmp, {"bench", cache, "--scaling", "0,2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--scaling: must be >= 1, got 0"), std::string::npos) << bad.err;
  CliRun val = Yolocache(tmp, {"bench", cache, "--mode", "val", "--batch", "4", "--batches", "2", "--json"});
  ASSERT_EQ(val.exit_code, 0) << val.err;
  EXPECT_EQ(nlohmann::json::parse(val.out)["split"], "val");
}

// Issue 18: every bench and inspect option is checked when parsed; nonsense is a usage error (exit 2)
// naming the option and what it allows, never a run on it (`bench --layout xyz --threads -1 --warmup -5`
// used to measure with NCHW, all cores and the default warm-up, and exit 0).
TEST(Cli, BenchAndInspectRefuseBadOptionsWithExitTwo) {
  TempDir tmp;
  Synth(tmp / "data", 8, 0);
  const std::string cache = (tmp / "cache").string();
  ASSERT_EQ(Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "64"}).exit_code, 0);
  const std::string jpg = (tmp / "x.jpg").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"bench", cache, "--layout", "xyz", "--threads", "-1", "--warmup", "-5", "--batches", "2", "--batch", "4"},
       "--threads: must be >= 0, got -1"},  // the first bad option in the order they are defined
      {{"bench", cache, "--layout", "xyz"}, "--layout: xyz not in {nchw,nhwc}"},
      {{"bench", cache, "--warmup", "-5"}, "--warmup: must be >= 0, got -5"},
      {{"bench", cache, "--mode", "test"}, "--mode: test not in {train,val}"},
      {{"bench", cache, "--batch", "0"}, "--batch: must be >= 1, got 0"},
      {{"bench", cache, "--batches", "0"}, "--batches: must be >= 1"},
      {{"bench", cache, "--imgsz", "16"}, "--imgsz: Value 16 not in range 32 to 8192"},
      {{"bench", cache, "--prefetch", "0"}, "--prefetch: must be >= 1"},
      {{"bench", cache, "--rounds", "0"}, "--rounds: must be >= 1"},
      {{"bench", cache, "--profile-samples", "-1"}, "--profile-samples: must be >= 0"},
      {{"bench", cache, "--seed", "-1"}, "--seed: must be >= 0, got -1"},
      {{"bench", cache, "--batch", "many"}, "--batch"},
      {{"inspect", cache, "--record", "-2", "--out", jpg}, "--record: must be >= 0, got -2"},
      {{"inspect", cache, "--preview", jpg, "--preview-count", "0"}, "--preview-count: must be >= 1, got 0"},
      {{"inspect", cache, "--preview-count", "4"}, "--preview-count requires --preview"},
      {{"inspect", cache, "--epoch", "-1", "--preview", jpg}, "--epoch: must be >= 0, got -1"},
      {{"inspect", cache, "--seed", "-3", "--preview", jpg}, "--seed: must be >= 0, got -3"},
      {{"inspect", cache, "--record", "0", "--out", jpg, "--preview", jpg}, "excludes"},
      {{"inspect", cache, "--out", jpg}, "--out requires --record"},
      {{"inspect", cache, "--export-augmented", "5abc", (tmp / "aug").string()}, "N must be a whole number, got '5abc'"},
  };
  for (const auto& [args, message] : cases) {
    CliRun r = Yolocache(tmp, args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[2] << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << "expected '" << message << "' in: " << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp / "x.jpg"));
  EXPECT_FALSE(fs::exists(tmp / "aug"));
}

TEST(Cli, PreviewAndExportAugmented) {
  TempDir tmp;
  Synth(tmp / "data", 16, 0);
  const std::string cache = (tmp / "cache").string();
  ASSERT_EQ(Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "128"}).exit_code, 0);
  CliRun p = Yolocache(tmp, {"inspect", cache, "--preview", (tmp / "grid.jpg").string(), "--preview-count", "4"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_GT(testing::ReadFile(tmp / "grid.jpg").size(), 1000u);
  CliRun e = Yolocache(tmp, {"inspect", cache, "--export-augmented", "20", (tmp / "aug").string()});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  int images = 0;
  for (const auto& f : fs::directory_iterator(tmp / "aug" / "images" / "train")) {
    ++images;
    EXPECT_TRUE(fs::exists(tmp / "aug" / "labels" / "train" / f.path().filename().replace_extension(".txt")));
  }
  EXPECT_EQ(images, 20);
  // The export is itself a valid YOLO dataset.
  CliRun v = Yolocache(tmp, {"verify", (tmp / "aug" / "data.yaml").string(), "--json"});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

TEST(Cli, KillNineDuringARebuildNeverBreaksTheExistingCache) {
  TempDir tmp;
  Synth(tmp / "data", 120, 0);
  const std::string yaml = (tmp / "data" / "data.yaml").string(), cache = (tmp / "cache").string();
  ASSERT_EQ(Yolocache(tmp, {"build", yaml, "-o", cache, "--imgsz", "160"}).exit_code, 0);
  // Measure one rebuild, then kill rebuilds at random moments across that span.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Yolocache(tmp, {"build", yaml, "-o", cache, "--imgsz", "160"}).exit_code, 0);
  const auto span = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::mt19937 rng(7);
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = Spawn({"build", yaml, "-o", cache, "--imgsz", "160", "--compress", "zstd"}, tmp / "o", tmp / "e");
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % std::max<int64_t>(1, span.count())));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CliRun v = Yolocache(tmp, {"verify", cache, "-q"});
    EXPECT_EQ(v.exit_code, 0) << "round " << round << ": " << v.out << v.err;
  }
  // The next build clears the dead builds' staging directories.
  ASSERT_EQ(Yolocache(tmp, {"build", yaml, "-o", cache, "--imgsz", "160"}).exit_code, 0);
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".building-"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace yc
