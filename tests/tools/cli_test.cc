// The `yolocache` binary as a user runs it: exit codes, --json documents, --help, and kill -9 in the
// middle of a build over an existing cache.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "libcache/cache.h"
#include "libcache/format/record_format.h"
#include "libcache/source/synth.h"
#include "tests/libcache/forge_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  return testing::SpawnTool("yolocache", args, out, err);
}

using testing::Yolocache;

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
  for (const char* cmd : {"synth", "build", "verify", "inspect", "push"}) {
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

// Issue 18's forged records: each rewritten with its record checksum recomputed and the shard's index,
// footer and shard checksums and the manifest re-sealed, so only value validation can catch it.
// verify exits 1 naming every forged record; inspect --record, --preview and bench fail with a
// message (exit 1), never crash or over-allocate.
TEST(Cli, ForgedRecordsAreReportedAndNeverCrashAReader) {
  TempDir tmp;
  Synth(tmp / "data", 16, 0);
  const fs::path cache = tmp / "cache";
  ASSERT_EQ(Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache.string(), "--imgsz", "64"}).exit_code, 0);
  auto manifest = ReadManifest(cache);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  const RecordLimits limits = ManifestRecordLimits(manifest.value());
  std::map<int64_t, std::string> expected;  // forged record -> a piece of its message
  std::map<testing::Forgery, int64_t> record_of;
  int64_t index = 0;
  for (testing::Forgery f : testing::AllForgeries()) {
    testing::RecordParts parts = testing::PartsOf(testing::ReadStoredRecord(cache, "train", static_cast<size_t>(index)));
    expected[index] = testing::Forge(f, limits, &parts);
    testing::ReplaceShardRecord(cache, "train", static_cast<size_t>(index), parts.Encode());
    record_of[f] = index++;
  }

  CliRun v = Yolocache(tmp, {"verify", cache.string(), "--json"});
  EXPECT_EQ(v.exit_code, 1) << v.err;
  std::map<int64_t, std::string> found;
  const nlohmann::json report = nlohmann::json::parse(v.out);
  for (const auto& p : report["problems"]) {
    EXPECT_EQ(p["split"], "train");
    EXPECT_NE(p["file"].get<std::string>().find("train-00000.shard"), std::string::npos) << p.dump();
    found[p["record"].get<int64_t>()] = p["message"].get<std::string>();
  }
  EXPECT_EQ(found.size(), expected.size()) << v.out;
  for (const auto& [record, piece] : expected)
    EXPECT_NE(found[record].find(piece), std::string::npos) << "record " << record << ": " << found[record];

  // One inspect per kind of check (a process each: the others behave alike).
  for (testing::Forgery f : {testing::Forgery::kChannels1, testing::Forgery::kHuge1Channel, testing::Forgery::kClassIntMin,
                             testing::Forgery::kNanBox, testing::Forgery::kZstdBomb}) {
    const int64_t record = record_of[f];
    const std::string& piece = expected[record];
    const fs::path jpeg = tmp / ("r" + std::to_string(record) + ".jpg");
    CliRun r = Yolocache(tmp, {"inspect", cache.string(), "--record", std::to_string(record), "--out", jpeg.string()});
    EXPECT_EQ(r.exit_code, 1) << "record " << record << ": " << r.err;
    EXPECT_NE(r.err.find("record " + std::to_string(record)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(piece), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(jpeg));
  }
  CliRun good = Yolocache(tmp, {"inspect", cache.string(), "--record", "15", "--out", (tmp / "ok.jpg").string()});
  EXPECT_EQ(good.exit_code, 0) << good.err;

  CliRun bench = Yolocache(tmp, {"bench", cache.string(), "--batch", "8", "--batches", "2", "--threads", "2"});
  EXPECT_EQ(bench.exit_code, 1) << bench.err;
  EXPECT_NE(bench.err.find("train-00000.shard: record "), std::string::npos) << bench.err;
  CliRun preview = Yolocache(tmp, {"inspect", cache.string(), "--preview", (tmp / "grid.jpg").string()});
  EXPECT_EQ(preview.exit_code, 1) << preview.err;
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
// --cold drops the cache's pages and says so; read-ahead at any budget leaves the checksum alone;
// the disk figures come from /proc/self/io.
TEST(Cli, BenchColdWithAndWithoutReadAheadGivesTheSameBatches) {
  TempDir tmp;
  Synth(tmp / "data", 24, 0);
  const std::string cache = (tmp / "cache").string();
  ASSERT_EQ(Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "128"}).exit_code, 0);
  std::set<std::string> checksums;
  for (const char* budget : {"0", "1", "512"}) {
    CliRun r = Yolocache(tmp, {"bench", cache, "--batch", "8", "--batches", "3", "--threads", "2", "--json", "--cold",
                               "--read-ahead", budget, "--profile-samples", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["cold"].get<bool>());
    EXPECT_EQ(j["read_ahead_mb"], std::stoi(budget));
    ASSERT_TRUE(j.contains("disk_bytes_per_sample"));
    EXPECT_GE(j["disk_bytes_per_sample"].get<double>(), 0.0);
    EXPECT_GE(j["disk_mb_per_second"].get<double>(), 0.0);
    checksums.insert(j["checksum"].get<std::string>());
  }
  EXPECT_EQ(checksums.size(), 1u) << "read-ahead must not change a batch";
  // The windowed order through the window stage (O_DIRECT) and through the page cache: one checksum,
  // and the JSON says which ran.
  std::set<std::string> windowed;
  for (const char* io : {"direct", "page-cache"}) {
    CliRun r = Yolocache(tmp, {"bench", cache, "--batch", "8", "--batches", "3", "--threads", "2", "--json", "--cold",
                               "--order", "windowed", "--window", "1", "--window-io", io, "--profile-samples", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["window_io"], io);
    windowed.insert(j["checksum"].get<std::string>());
  }
  EXPECT_EQ(windowed.size(), 1u) << "the window stage must not change a batch";
  EXPECT_EQ(Yolocache(tmp, {"bench", cache, "--order", "windowed", "--window-io", "mmap"}).exit_code, 2);
  CliRun text = Yolocache(tmp, {"bench", cache, "--batch", "8", "--batches", "2", "--cold", "--no-checksum"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("cold: the split's pages were dropped"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("MB read per sample"), std::string::npos) << text.out;
  EXPECT_EQ(Yolocache(tmp, {"bench", cache, "--cold", "--scaling", "1,2"}).exit_code, 2);
}

TEST(Cli, BenchAndInspectRefuseBadOptionsWithExitTwo) {
  TempDir tmp;
  Synth(tmp / "data", 8, 0);
  const std::string cache = (tmp / "cache").string();
  ASSERT_EQ(Yolocache(tmp, {"build", (tmp / "data" / "data.yaml").string(), "-o", cache, "--imgsz", "64"}).exit_code, 0);
  const std::string jpg = (tmp / "x.jpg").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"bench", cache, "--layout", "xyz", "--threads", "-1", "--warmup", "-5", "--batches", "2", "--batch", "4"},
       "--threads: must be 0 (all cores) .. 1024, got -1"},  // the first bad option in the order they are defined
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

// Runs yolocache like Yolocache, but kills it after `limit` (exit_code -1 then), so a hang fails the test.
CliRun YolocacheWithin(const TempDir& tmp, const std::vector<std::string>& args, std::chrono::seconds limit) {
  CliRun r;
  const pid_t pid = Spawn(args, tmp / "stdout", tmp / "stderr");
  if (pid < 0) return r;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.err = "killed after " + std::to_string(limit.count()) + " s\n";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::ReadFile(tmp / "stdout");
  r.err += testing::ReadFile(tmp / "stderr");
  return r;
}

// A small cache built by the binary, as in the reproduction.
fs::path BuildSmallCache(const TempDir& tmp) {
  SynthOptions o;
  o.train_images = 16;
  o.val_images = 8;
  o.min_side = 64;
  o.max_side = 160;
  EXPECT_TRUE(GenerateSynthDataset(tmp / "ds", o).ok());
  CliRun b = Yolocache(tmp, {"build", (tmp / "ds" / "data.yaml").string(), "-o", (tmp / "c").string(), "--imgsz", "64"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  return tmp / "c";
}

// Issue 18: a cache whose manifest.json is missing, a folder, a FIFO, a link to /dev/zero, or has a
// 2 GB tail was "OK: 0 errors". Now: exit 1 naming manifest.json, within seconds.
TEST(Cli, VerifyFailsOnACacheWithoutAUsableManifest) {
  TempDir tmp;
  const fs::path cache = BuildSmallCache(tmp);
  struct Case {
    const char* name;
    std::function<void(const fs::path&)> damage;
  };
  const std::vector<Case> cases = {
      {"missing", [](const fs::path& m) { fs::remove(m); }},
      {"a directory", [](const fs::path& m) { fs::remove(m); fs::create_directory(m); }},
      {"a FIFO", [](const fs::path& m) { fs::remove(m); ASSERT_EQ(::mkfifo(m.c_str(), 0644), 0); }},
      {"a link to /dev/zero", [](const fs::path& m) { fs::remove(m); fs::create_symlink("/dev/zero", m); }},
      {"a 2 GB sparse tail", [](const fs::path& m) { ASSERT_EQ(::truncate(m.c_str(), off_t{2} << 30), 0); }},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const fs::path broken = tmp / "cn";
    fs::remove_all(broken);
    fs::copy(cache, broken, fs::copy_options::recursive);
    cases[i].damage(broken / "manifest.json");
    const bool json = i % 2 == 1;  // both outputs, without running every case twice
    std::vector<std::string> args = {"verify", broken.string()};
    if (json) args.push_back("--json");
    CliRun r = YolocacheWithin(tmp, args, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("manifest.json"), std::string::npos) << r.out << r.err;
    if (json && r.exit_code == 1) {
      EXPECT_FALSE(nlohmann::json::parse(r.out)["ok"].get<bool>());
    } else if (!json) {
      EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
    }
  }
  // A dataset folder is still audited as one.
  CliRun r = Yolocache(tmp, {"verify", (tmp / "ds").string(), "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("dataset:"), std::string::npos) << r.out;
}

// Edits to manifest.json (imgsz, a class name, a source hash, a box count) and to audit.json used to
// pass `verify`; now each is exit 1 naming the file.
TEST(Cli, VerifyFailsOnEditedMetadata) {
  TempDir tmp;
  const fs::path cache = BuildSmallCache(tmp);
  using Edit = std::function<void(nlohmann::ordered_json&)>;
  const std::vector<std::pair<const char*, Edit>> edits = {
      {"imgsz", [](nlohmann::ordered_json& m) { m["imgsz"] = 4096; }},
      {"class name", [](nlohmann::ordered_json& m) { m["names"][0] = "not-a-class"; }},
      {"source hash", [](nlohmann::ordered_json& m) { m["splits"]["train"]["sources"][0]["hash"] = "0123456789abcdef"; }},
      {"box count", [](nlohmann::ordered_json& m) { m["splits"]["train"]["boxes"] = m["splits"]["train"]["boxes"].get<int>() + 1; }},
  };
  const std::string original = testing::ReadFile(cache / "manifest.json");
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what);
    nlohmann::ordered_json m = nlohmann::ordered_json::parse(original);
    edit(m);
    testing::WriteFile(cache / "manifest.json", m.dump(2) + "\n");  // as a user's script would
    CliRun r = Yolocache(tmp, {"verify", cache.string()});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("manifest.json: manifest_checksum"), std::string::npos) << r.out;
  }
  testing::WriteFile(cache / "manifest.json", original);
  const std::string audit = testing::ReadFile(cache / "audit.json");
  nlohmann::ordered_json a = nlohmann::ordered_json::parse(audit);
  a["splits"]["train"]["images"] = a["splits"]["train"]["images"].get<int>() + 1;
  testing::WriteFile(cache / "audit.json", a.dump(2) + "\n");
  CliRun r = Yolocache(tmp, {"verify", cache.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("audit.json"), std::string::npos) << r.out;
  testing::WriteFile(cache / "audit.json", audit);
  EXPECT_EQ(Yolocache(tmp, {"verify", cache.string(), "-q"}).exit_code, 0);
}

// A cache written by the previous yolocache (manifest format 1, no checksum): verify and
// build --update say to rebuild, and a plain build replaces it.
TEST(Cli, AnOldFormatCacheAsksForARebuild) {
  TempDir tmp;
  const fs::path cache = BuildSmallCache(tmp);
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(testing::ReadFile(cache / "manifest.json"));
  m["format_version"] = 1;
  m.erase("manifest_checksum");
  m.erase("audit_report");
  testing::WriteFile(cache / "manifest.json", m.dump(2) + "\n");
  CliRun v = Yolocache(tmp, {"verify", cache.string()});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("built by an older yolocache"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("rebuild with `yolocache build`"), std::string::npos) << v.out;
  const std::string yaml = (tmp / "ds" / "data.yaml").string();
  CliRun u = Yolocache(tmp, {"build", yaml, "-o", cache.string(), "--imgsz", "64", "--update"});
  EXPECT_NE(u.exit_code, 0);
  EXPECT_NE(u.err.find("rebuild without --update"), std::string::npos) << u.err;
  CliRun b = Yolocache(tmp, {"build", yaml, "-o", cache.string(), "--imgsz", "64"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(Yolocache(tmp, {"verify", cache.string(), "-q"}).exit_code, 0);
}

}  // namespace
}  // namespace yc

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

TEST(Cli, ImgszIsBoundedOnEveryCommandThatTakesIt) {
  TempDir tmp;
  Synth(tmp / "data", 4, 0);
  const std::string yaml = (tmp / "data" / "data.yaml").string(), cache = (tmp / "c").string();
  for (const char* size : {"100000", "8193", "-1"}) {
    CliRun r = Yolocache(tmp, {"build", yaml, "-o", cache, "--imgsz", size});
    EXPECT_EQ(r.exit_code, 2) << size << ": " << r.err;
    EXPECT_NE(r.err.find("--imgsz"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(cache)) << "nothing written for a usage error";
  }
  ASSERT_EQ(Yolocache(tmp, {"build", yaml, "-o", cache, "--imgsz", "64"}).exit_code, 0);
  CliRun b = Yolocache(tmp, {"bench", cache, "--imgsz", "100000", "--batches", "1", "--batch", "2"});
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("--imgsz"), std::string::npos) << b.err;
}

TEST(Cli, FolderModeHugeClassIdIsALabelErrorNotAnAllocation) {
  TempDir tmp;
  Synth(tmp / "ds", 2, 0);
  fs::create_directories(tmp / "dm/images/train");
  fs::create_directories(tmp / "dm/labels/train");
  fs::copy_file(tmp / "ds/images/train/synth_000000.jpg", tmp / "dm/images/train/a.jpg");
  fs::copy_file(tmp / "ds/images/train/synth_000001.jpg", tmp / "dm/images/train/b.jpg");
  testing::WriteFile(tmp / "dm/labels/train/a.txt", "2000000000 0.5 0.5 0.1 0.1\n");
  testing::WriteFile(tmp / "dm/labels/train/b.txt", "10000000 0.5 0.5 0.1 0.1\n");
  CliRun r = Yolocache(tmp, {"verify", (tmp / "dm").string(), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_LT(r.out.size(), 10000u) << "no per-class array sized by the id";
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["total"]["problem_counts"]["label-class-out-of-range"], 2) << r.out;
  EXPECT_EQ(j["total"]["class_counts"].size(), 0u);
}

TEST(Cli, MoreThanAMillionBoxesIsOneCodeInVerifyAndBuild) {
  TempDir tmp;
  Synth(tmp / "ds", 4, 0);
  // kMaxRecordBoxes + 1 distinct rows (cx steps by 1e-7, distinct as float32), about 22 MB.
  std::string rows;
  char row[64];
  for (uint32_t i = 0; i <= kMaxRecordBoxes; ++i) {
    rows.append(row, static_cast<size_t>(std::snprintf(row, sizeof row, "0 0.%07u .5 .01 .01\n", i)));
  }
  testing::WriteFile(tmp / "ds/labels/train/synth_000000.txt", rows);
  const std::string yaml = (tmp / "ds/data.yaml").string();
  CliRun v = Yolocache(tmp, {"verify", yaml, "--json"});
  EXPECT_EQ(v.exit_code, 1) << v.err;
  const nlohmann::json vj = nlohmann::json::parse(v.out);
  EXPECT_EQ(vj["splits"]["train"]["problem_counts"]["label-too-many-boxes"], 1) << v.out.substr(0, 2000);
  CliRun b = Yolocache(tmp, {"build", yaml, "-o", (tmp / "c").string(), "--imgsz", "64", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json bj = nlohmann::json::parse(b.out);
  EXPECT_EQ(bj["splits"]["train"]["excluded"], vj["splits"]["train"]["excluded"]);
  EXPECT_EQ(bj["splits"]["train"]["boxes"], vj["splits"]["train"]["boxes"]);
  EXPECT_LT(bj["splits"]["train"]["boxes"].get<size_t>(), 1000u) << "the excluded image's boxes are not counted";
  const nlohmann::json audit = nlohmann::json::parse(testing::ReadFile(tmp / "c" / "audit.json"));
  EXPECT_EQ(audit["splits"]["train"]["problem_counts"]["label-too-many-boxes"], 1);
  EXPECT_EQ(audit["splits"]["train"]["problem_counts"].count("corrupt-data"), 0u);
}

}  // namespace
}  // namespace yc
