// Issue 25, groups 6 and 7 through `yolocache-train` as a user runs it: SIGINT/SIGTERM/SIGHUP honoured
// from the first instruction of every subcommand (the cache build inside `train --data X.yaml` stops and
// removes its staging folder), the temp files a killed run left removed at the next run (only ours, only
// of dead processes), paths that are not UTF-8 in every JSON document, and a fatal error (an export too
// large for memory) as one line instead of LibTorch's backtrace.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/base/path_text.h"
#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/config/args_yaml.h"
#include "trainer/io/checkpoint.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = std::chrono::seconds(120);  // a hang fails the test instead of blocking CI

// How a process ended: exit code, or the signal that killed it.
struct Ended {
  bool exited = false;  // false: killed by `signal` (or still running at the deadline: signal SIGKILL)
  int code = -1, signal = 0;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Ended& e) {
  return os << (e.exited ? "exit " + std::to_string(e.code) : "killed by signal " + std::to_string(e.signal))
            << "; stderr: " << e.err;
}

// Starts yolocache-train with `args` in `dir` (stdout and stderr to <dir>/stdout, <dir>/stderr), with its
// address space capped at `as_cap` bytes when non-zero.
pid_t Start(const fs::path& dir, const std::vector<std::string>& args, rlim_t as_cap = 0) {
  const std::string exe = (testing::BinaryDir() / "yolocache-train").string();
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
    const rlimit cap{as_cap, as_cap};
    if (as_cap > 0 && ::setrlimit(RLIMIT_AS, &cap) != 0) ::_exit(125);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

Ended WaitWithin(pid_t pid, const fs::path& dir) {
  Ended e;
  const auto end = Clock::now() + kDeadline;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "yolocache-train did not end within the deadline";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  e.exited = WIFEXITED(status);
  e.code = e.exited ? WEXITSTATUS(status) : -1;
  e.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  e.err = testing::ReadFile(dir / "stderr");
  return e;
}

Ended RunCli(const fs::path& dir, const std::vector<std::string>& args, rlim_t as_cap = 0) {
  return WaitWithin(Start(dir, args, as_cap), dir);
}

// True once `pid` catches `sig` (a handler is installed): /proc/<pid>/status, SigCgt.
bool Catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1u;
  }
  return false;
}

// Waits until `ready` holds (a failure after 60 s), sends `sig` to `pid` and waits for it to end.
Ended Interrupt(pid_t pid, int sig, const fs::path& dir, const std::function<bool()>& ready) {
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (!ready() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::microseconds(500));
  EXPECT_TRUE(ready()) << "the moment to send " << strsignal(sig) << " never came";
  ::kill(pid, sig);
  return WaitWithin(pid, dir);
}

bool HasStaging(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().find(".building-") != std::string::npos) return true;
  }
  return false;
}

// An untrained yolov8n checkpoint for two classes at imgsz 64.
fs::path UntrainedCheckpoint(const fs::path& path) {
  CheckpointMeta meta;
  meta.model_scale = "n";
  meta.names = {"a", "b"};
  meta.nc = 2;
  meta.options.imgsz = 64;
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, meta.nc));
  CheckpointContents c;
  c.meta = meta;
  c.model = model.get();
  EXPECT_TRUE(WriteCheckpoint(path, c).ok());
  return path;
}

// A pid that no process has: a child that has exited and been reaped.
long DeadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

std::vector<std::string> TinyTrain(const std::string& data, const fs::path& out) {
  return {"train", "--data", data, "--model", "yolov8n", "--imgsz", "64", "--epochs", "1", "--batch", "4",
          "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--no-val", "--no-plots", "--out", out.string()};
}

// Issue 25 #6: while `train --data X.yaml` built its cache no handler was installed: the process died by
// the signal (143/129) and left the staging folder. Now the build stops, removes it, and train exits 130.
TEST(InterruptCli, EverySignalStopsTheCacheBuildOfTrainData) {
  TempDir tmp;
  SynthOptions so;  // a build of a second or two at imgsz 64: the signal lands inside it
  so.train_images = 400;
  so.val_images = 4;
  so.min_side = 320;
  so.max_side = 640;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "ds", so).ok());
  const fs::path caches = tmp / "caches";
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    std::vector<std::string> args = TinyTrain((tmp / "ds/data.yaml").string(), tmp / "run");
    args.insert(args.end(), {"--cache-dir", caches.string()});
    const pid_t pid = Start(tmp.path(), args);
    ASSERT_GT(pid, 0);
    const Ended e = Interrupt(pid, sig, tmp.path(), [&] { return HasStaging(caches); });
    EXPECT_TRUE(e.exited && e.code == 130) << strsignal(sig) << ": " << e;
    EXPECT_FALSE(HasStaging(caches)) << "staging folder left behind after " << strsignal(sig);
    EXPECT_TRUE(fs::is_empty(caches)) << strsignal(sig);  // no cache either: it was never finished
    EXPECT_FALSE(fs::exists(tmp / "run" / "weights")) << strsignal(sig);
  }
}

// Every subcommand honours SIGTERM from its first instruction, also in work that polls nothing (loading
// weights, an export, the ceiling probe): exit 130, never death by the signal or a swallowed signal.
TEST(InterruptCli, SigtermIsHonouredByEverySubcommandFromTheStart) {
  TempDir tmp;
  const fs::path weights = UntrainedCheckpoint(tmp / "w.pt");
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 4));
  const std::vector<std::vector<std::string>> commands = {
      {"ceiling", "--model", "yolov8n", "--nc", "2", "--batch", "1", "--imgsz", "64", "--device", "cpu",
       "--torch-threads", "1", "--synthetic-iters", "100000000"},
      {"export", "--weights", weights.string(), "--format", "torchscript", "--imgsz", "1024", "--batch", "4",
       "--out", (tmp / "w.torchscript").string()},
      {"val", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu", "--threads", "1"},
      {"predict", "--weights", weights.string(), (tmp / "data/images/val").string(), "--device", "cpu", "--out",
       (tmp / "pred").string()},
      {"train", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu", "--imgsz", "64",
       "--epochs", "100", "--out", (tmp / "run").string()},
  };
  for (const auto& args : commands) {
    const pid_t pid = Start(tmp.path(), args);
    ASSERT_GT(pid, 0);
    const Ended e = Interrupt(pid, SIGTERM, tmp.path(), [&] { return Catches(pid, SIGTERM); });
    EXPECT_TRUE(e.exited && e.code == 130) << args[0] << ": " << e;
  }
}

// Issue 25 #6: kill -9 while last.pt was written left .last.pt.tmp-PID (a whole checkpoint) for good. The
// next run removes the temp files of our naming whose process is gone, and nothing else.
TEST(InterruptCli, ARunRemovesStaleTempFilesOfDeadProcessesOnly) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  const fs::path run = tmp / "run", weights = run / "weights";
  fs::create_directories(weights);
  const std::string dead = std::to_string(DeadPid()), live = std::to_string(::getpid());
  const std::vector<std::string> stale = {".last.pt.tmp-" + dead, ".epoch3.pt.tmp-" + dead};
  const std::vector<std::string> kept = {".last.pt.tmp-" + live,  // a run writing there right now
                                         ".last.pt.tmp-" + dead + "x", ".last.pt.tmp-0" + dead, "last.pt.tmp-" + dead,
                                         ".tmp-" + dead, "notes.txt"};
  for (const auto& name : stale) testing::WriteFile(weights / name, "half a checkpoint");
  for (const auto& name : kept) testing::WriteFile(weights / name, "not ours to delete");
  testing::WriteFile(run / (".args.json.tmp-" + dead), "{");
  fs::create_directory(weights / (".best.pt.tmp-" + dead));  // a folder: not a file we write
  fs::create_symlink(tmp / "data", weights / (".x.pt.tmp-" + dead));

  const Ended e = RunCli(tmp.path(), TinyTrain(cache.string(), run));
  ASSERT_TRUE(e.exited && e.code == 0) << e;
  for (const auto& name : stale) EXPECT_FALSE(fs::exists(weights / name)) << name;
  EXPECT_FALSE(fs::exists(run / (".args.json.tmp-" + dead)));
  for (const auto& name : kept) EXPECT_EQ(testing::ReadFile(weights / name), "not ours to delete") << name;
  EXPECT_TRUE(fs::is_directory(weights / (".best.pt.tmp-" + dead)));
  EXPECT_TRUE(fs::is_symlink(weights / (".x.pt.tmp-" + dead)));
  EXPECT_TRUE(fs::exists(weights / "last.pt"));
}

// Issue 25 #7: a path that is not UTF-8 (kept byte-exact by the data side) made train exit 3 with
// "[json.exception.type_error.316]" and predict --json print nothing. Paths are escaped as the data
// side does (path_json.h): readable text plus the exact bytes in "<key>_hex", which resume reads back.
TEST(InterruptCli, PathsThatAreNotUtf8GiveValidJson) {
  TempDir tmp;
  const fs::path made = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  const fs::path cache = tmp / "cache-caf\xe9";
  fs::rename(made, cache);
  const fs::path run = tmp / "run-\xff\xfe";
  const Ended t = RunCli(tmp.path(), TinyTrain(cache.string(), run));
  ASSERT_TRUE(t.exited && t.code == 0) << t;
  // args.yaml is valid UTF-8 with the readable names (\xNN for each byte that is not); the exact bytes
  // are in the checkpoints' options.
  const std::string args = testing::ReadFile(run / "args.yaml");
  EXPECT_TRUE(IsUtf8(args));
  EXPECT_NE(args.find("\nsave_dir: " + YamlString(run.string()) + "\n"), std::string::npos) << args;
  EXPECT_NE(args.find("\ndata: " + YamlString(cache.string()) + "\n"), std::string::npos) << args;
  // The checkpoint's options (what --resume continues with) hold the exact bytes too.
  Result<std::unique_ptr<CheckpointReader>> last = CheckpointReader::Open(run / "weights" / "last.pt", at::kCPU);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ((*last)->meta().options.out, run.string());
  EXPECT_EQ((*last)->meta().options.data, cache.string());

  fs::path image;
  for (const auto& f : fs::directory_iterator(tmp / "data/images/val")) image = f.path();
  const fs::path odd = tmp / "photo-\xe9t\xe9.jpg";
  fs::copy_file(image, odd);
  const Ended p = RunCli(tmp.path(), {"predict", "--weights", (run / "weights/last.pt").string(), odd.string(), "--device",
                                   "cpu", "--out", (tmp / "pred-\xe9").string(), "--save-txt", "--json"});
  ASSERT_TRUE(p.exited && p.code == 0) << p;
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFile(tmp / "stdout"), nullptr, false);
  ASSERT_TRUE(j.is_array() && j.size() == 1) << testing::ReadFile(tmp / "stdout");
  EXPECT_EQ(j[0]["source"], PrintableText(odd.string()));
  EXPECT_EQ(j[0]["source_hex"], HexBytes(odd.string()));
  std::string output;
  ASSERT_TRUE(HexToBytes(j[0]["output_hex"].get<std::string>(), &output));
  EXPECT_TRUE(fs::exists(output)) << PrintableText(output);
  EXPECT_EQ(j[0].contains("labels"), j[0].contains("labels_hex"));  // labels/<stem>.txt, when it detected
}

// Issue 25 #7: a TorchScript export too large for memory died with LibTorch's 20-line C++ backtrace.
// Under an address-space cap the input alone (64 x 3 x 8192 x 8192 floats, 51 GB) cannot be allocated:
// one line with the reason, exit 3.
TEST(InterruptCli, AnExportTooLargeForMemoryIsOneLineExit3) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space: no cap possible";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan reserves terabytes of address space: no cap possible";
#endif
#endif
  TempDir tmp;
  const fs::path weights = UntrainedCheckpoint(tmp / "w.pt");
  const Ended e = RunCli(tmp.path(),
                      {"export", "--weights", weights.string(), "--format", "torchscript", "--imgsz", "8192", "--batch",
                       "64", "--out", (tmp / "w.torchscript").string()},
                      rlim_t{16} << 30);
  if (e.exited && e.code == 125) GTEST_SKIP() << "cannot cap the address space (setrlimit failed)";
  EXPECT_TRUE(e.exited && e.code == 3) << e;
  EXPECT_EQ(e.err.find("frame #"), std::string::npos) << e.err;
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
  EXPECT_EQ(e.err.rfind("yolocache-train export: ", 0), 0u) << e.err;
  EXPECT_NE(e.err.find("out of memory"), std::string::npos) << e.err;
  EXPECT_FALSE(fs::exists(tmp / "w.torchscript"));
}

}  // namespace
}  // namespace yc::trainer
