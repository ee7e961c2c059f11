// Helpers shared by the test suites: temp dirs, shared data lookup, small file writers.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace yc::testing {

// A fresh directory removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// ../shared/data/<name>, or an empty path when that folder is absent.
std::filesystem::path SharedData(const std::string& name);

// Directory holding the built binaries (yolocache, yolocache-train).
std::filesystem::path BinaryDir();

// A TCP port on 127.0.0.1 that was free a moment ago (for rendezvous in multi-process tests).
int FreeLoopbackPort();

// A built tool run to completion: its exit code (128 + signal when killed) and what it printed.
// Whether `text` (a command's output) contains `part`.
inline bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// Starts BinaryDir()/<tool> with `args`, stdout and stderr redirected to the files `out` and `err`, in
// the working directory `cwd` (empty: the caller's).
pid_t SpawnTool(const std::string& tool, const std::vector<std::string>& args, const std::filesystem::path& out,
                const std::filesystem::path& err, const std::filesystem::path& cwd = {});
// SpawnTool in the working directory `dir` (a test's temp directory: relative outputs such as
// yolocache-train's default runs/detect/... land there), waits for it, and reads back its output (via
// <dir>/stdout and <dir>/stderr).
CliRun RunTool(const std::string& tool, const std::filesystem::path& dir, const std::vector<std::string>& args);
// RunTool of the two CLIs in a test's temp directory.
inline CliRun Yolocache(const TempDir& tmp, const std::vector<std::string>& args) {
  return RunTool("yolocache", tmp.path(), args);
}
inline CliRun YolocacheTrain(const TempDir& tmp, const std::vector<std::string>& args) {
  return RunTool("yolocache-train", tmp.path(), args);
}

// One process of a data-parallel launch: its exit code (-1: killed at the deadline or never started) and
// its stdout + stderr.
struct RankRun {
  int exit_code = -1;
  std::string log;
};

// Starts `world` copies of the executable `exe` as data-parallel ranks, the environment torchrun sets
// (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT=`port`) plus OMP_NUM_THREADS=1, with
// the parent's launcher variables removed; world 0 starts one plain process without them. Each writes to
// <dir>/<log_prefix>rank<r>.log. Waits for all and kills what is left at `deadline`, so a hang fails a
// test instead of blocking CI.
std::vector<RankRun> LaunchRanks(const std::string& exe, int world, const std::vector<std::string>& args,
                                 const std::filesystem::path& dir, int port, std::chrono::seconds deadline,
                                 const std::string& log_prefix = "");
// LaunchRanks on a free loopback port, retried on a new one when a rank reports the port taken meanwhile.
std::vector<RankRun> LaunchRanksOnFreePort(const std::string& exe, int world, const std::vector<std::string>& args,
                                           const std::filesystem::path& dir, std::chrono::seconds deadline,
                                           const std::string& log_prefix = "");

void WriteFile(const std::filesystem::path& path, const std::string& bytes);
std::string ReadFile(const std::filesystem::path& path);
// Every entry under `dir` (relative path -> file bytes, "<dir>" or "-> link target"): compared before and
// after a refused command, so a single deleted, added or changed byte anywhere shows.
std::map<std::string, std::string> TreeSnapshot(const std::filesystem::path& dir);

// A synthetic dataset small enough for CLI tests: 8 train and 4 val images of 64..96 px, each with a
// label file; returns <dir>/data.yaml.
std::filesystem::path TinySynthDataset(const std::filesystem::path& dir);

// Flips one pixel bit of the first record of a shard file (record 0: its header's pixel_offset past
// the 64-byte shard header), leaving every checksum as it was: only hashing the record finds it.
void FlipFirstRecordPixel(const std::filesystem::path& shard);

// The process's working directory for a scope (tools spawned meanwhile inherit it).
class ScopedCwd {
 public:
  explicit ScopedCwd(const std::filesystem::path& dir) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~ScopedCwd() { std::filesystem::current_path(old_); }

 private:
  std::filesystem::path old_;
};

}  // namespace yc::testing

// Skips the current test with a message when a shared data folder is missing.
#define YC_REQUIRE_SHARED(var, name)                                              \
  const std::filesystem::path var = ::yc::testing::SharedData(name);              \
  if (var.empty()) GTEST_SKIP() << "../shared/data/" << name << " not present; skipped"
