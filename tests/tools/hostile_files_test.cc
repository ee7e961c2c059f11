// The `yolocache` binary against hostile and unlucky inputs: FIFOs where files belong (every command
// must return, with the right exit code, instead of blocking), SIGTERM/SIGHUP during long work (exit
// 130, nothing left behind), folders the user cannot read (reported, never skipped as empty), and file
// names that are not UTF-8 (stored byte-exact, valid JSON everywhere).
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/base/path_text.h"
#include "libcache/format/manifest.h"
#include "libcache/source/synth.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = std::chrono::seconds(20);  // generous for ASan on a loaded machine

// Waits for `pid` until `deadline`; kills it when it is still running then (a hang fails the test
// instead of blocking CI). Exit code as RunTool gives it, -1 when it had to be killed.
int WaitWithin(pid_t pid, Clock::duration deadline) {
  const auto end = Clock::now() + deadline;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "yolocache did not return within the deadline (blocked?)";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

CliRun RunCli(const TempDir& tmp, const std::vector<std::string>& args) {
  CliRun r;
  const pid_t pid = testing::SpawnTool("yolocache", args, tmp / "stdout", tmp / "stderr");
  if (pid < 0) return r;
  r.exit_code = WaitWithin(pid, kDeadline);
  r.out = testing::ReadFile(tmp / "stdout");
  r.err = testing::ReadFile(tmp / "stderr");
  return r;
}

void Synth(const fs::path& dir, int train, int min_side = 64, int max_side = 160) {
  SynthOptions o;
  o.train_images = train;
  o.val_images = 4;
  o.min_side = min_side;
  o.max_side = max_side;
  o.background_fraction = 0;
  ASSERT_TRUE(GenerateSynthDataset(dir, o).ok());
}

void ReplaceWithFifo(const fs::path& path) {
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << path;
}

std::set<std::pair<std::string, std::string>> CodesAndFiles(const nlohmann::json& problems) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& p : problems) out.emplace(p["code"].get<std::string>(), p["file"].get<std::string>());
  return out;
}

fs::path FirstFile(const fs::path& dir, const std::string& suffix) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("train", 0) == 0 && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return e.path();
  }
  return {};
}

TEST(HostileFiles, FifoLabelAndImageAreReportedNotWaitedOn) {
  TempDir tmp;
  Synth(tmp / "ds", 8);
  ReplaceWithFifo(tmp / "ds/labels/train/synth_000001.txt");
  ReplaceWithFifo(tmp / "ds/images/train/synth_000002.jpg");
  const std::string yaml = (tmp / "ds/data.yaml").string();
  CliRun v = RunCli(tmp, {"verify", yaml, "--json"});
  EXPECT_EQ(v.exit_code, 1) << v.err;
  const nlohmann::json j = nlohmann::json::parse(v.out);
  const auto found = CodesAndFiles(j["problems"]);
  EXPECT_TRUE(found.count({"not-regular-file", "labels/train/synth_000001.txt"})) << v.out;
  EXPECT_TRUE(found.count({"not-regular-file", "images/train/synth_000002.jpg"})) << v.out;
  EXPECT_NE(v.out.find("not a regular file (a FIFO)"), std::string::npos) << v.out;

  // The build excludes both images (error severity) and finishes.
  CliRun b = RunCli(tmp, {"build", yaml, "-o", (tmp / "cache").string(), "--imgsz", "64"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json audit = nlohmann::json::parse(testing::ReadFile(tmp / "cache/audit.json"));
  EXPECT_TRUE(CodesAndFiles(audit["problems"]).count({"not-regular-file", "labels/train/synth_000001.txt"}));
  EXPECT_EQ(RunCli(tmp, {"verify", (tmp / "cache").string(), "-q"}).exit_code, 0);
}

TEST(HostileFiles, FifoListFileAndYamlFailWithTheirName) {
  TempDir tmp;
  Synth(tmp / "ds", 4);
  testing::WriteFile(tmp / "ds/list.yaml", "path: .\ntrain: train.txt\nval: images/val\nnames: [a, b, c, d]\n");
  ASSERT_EQ(::mkfifo((tmp / "ds/train.txt").c_str(), 0644), 0);
  for (const char* cmd : {"verify", "build"}) {
    std::vector<std::string> args = {cmd, (tmp / "ds/list.yaml").string()};
    if (std::string(cmd) == "build") args.insert(args.end(), {"-o", (tmp / "c").string()});
    CliRun r = RunCli(tmp, args);
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("train.txt: not a regular file (a FIFO)"), std::string::npos) << cmd << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp / "c"));
  ASSERT_EQ(::mkfifo((tmp / "fifo.yaml").c_str(), 0644), 0);
  CliRun y = RunCli(tmp, {"verify", (tmp / "fifo.yaml").string()});
  EXPECT_EQ(y.exit_code, 1) << y.err;
  EXPECT_NE(y.err.find("fifo.yaml: not a regular file (a FIFO)"), std::string::npos) << y.err;
}

TEST(HostileFiles, FifoManifestShardOrLmdbFailsTheCacheOpen) {
  TempDir tmp;
  Synth(tmp / "ds", 6);
  const std::string yaml = (tmp / "ds/data.yaml").string();
  for (const char* backend : {"shards", "lmdb"}) {
    const fs::path cache = tmp / (std::string("c-") + backend);
    ASSERT_EQ(RunCli(tmp, {"build", yaml, "-o", cache.string(), "--imgsz", "64", "--backend", backend}).exit_code, 0);
    const fs::path data = FirstFile(cache, std::string(backend) == "lmdb" ? ".lmdb" : ".shard");
    ASSERT_FALSE(data.empty());
    ReplaceWithFifo(data);
    CliRun v = RunCli(tmp, {"verify", cache.string()});
    EXPECT_EQ(v.exit_code, 1) << backend << ": " << v.out << v.err;
    EXPECT_NE(v.out.find(data.filename().string() + ": not a regular file (a FIFO)"), std::string::npos) << v.out;
    CliRun i = RunCli(tmp, {"inspect", cache.string()});
    EXPECT_EQ(i.exit_code, 1) << backend << ": " << i.err;
    EXPECT_NE(i.err.find("not a regular file (a FIFO)"), std::string::npos) << i.err;
  }
  const fs::path cache = tmp / "c-manifest";
  ASSERT_EQ(RunCli(tmp, {"build", yaml, "-o", cache.string(), "--imgsz", "64"}).exit_code, 0);
  ReplaceWithFifo(cache / kManifestFileName);
  CliRun v = RunCli(tmp, {"verify", cache.string()});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("manifest.json: not a regular file (a FIFO)"), std::string::npos) << v.out;
  CliRun i = RunCli(tmp, {"inspect", cache.string()});
  EXPECT_EQ(i.exit_code, 1) << i.err;
  EXPECT_NE(i.err.find("manifest.json: not a regular file (a FIFO)"), std::string::npos) << i.err;
}

// True once `pid` catches `sig` (its handler is installed): /proc/<pid>/status, SigCgt.
bool Catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    return (mask >> (sig - 1)) & 1u;
  }
  return false;
}

bool HasStaging(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".building") != std::string::npos) return true;
  return false;
}

// Starts `args`, waits until it handles `sig` and `ready()` holds, sends `sig`: the exit code.
int Interrupt(const TempDir& tmp, const std::vector<std::string>& args, int sig, const std::function<bool()>& ready) {
  const pid_t pid = testing::SpawnTool("yolocache", args, tmp / "stdout", tmp / "stderr");
  if (pid < 0) return -1;
  const auto end = Clock::now() + kDeadline;
  while (Clock::now() < end && !(Catches(pid, sig) && ready())) std::this_thread::sleep_for(std::chrono::microseconds(200));
  ::kill(pid, sig);
  const int code = WaitWithin(pid, kDeadline);
  if (code != 130) ADD_FAILURE() << "stderr: " << testing::ReadFile(tmp / "stderr");
  return code;
}

TEST(HostileFiles, SigtermAndSighupStopWorkCleanly) {
  TempDir tmp;
  Synth(tmp / "ds", 160, 256, 480);  // a few hundred ms of work per command
  const std::string yaml = (tmp / "ds/data.yaml").string(), cache = (tmp / "cache").string();
  for (const int sig : {SIGTERM, SIGHUP}) {
    EXPECT_EQ(Interrupt(tmp, {"build", yaml, "-o", cache, "--imgsz", "160"}, sig, [&] { return HasStaging(tmp.path()); }), 130)
        << strsignal(sig);
    EXPECT_FALSE(HasStaging(tmp.path())) << "staging dir left behind after " << strsignal(sig);
    EXPECT_FALSE(fs::exists(cache)) << strsignal(sig);
    EXPECT_EQ(Interrupt(tmp, {"verify", yaml}, sig, [] { return true; }), 130) << strsignal(sig);
  }
  // synth removes what it had written.
  EXPECT_EQ(Interrupt(tmp, {"synth", (tmp / "gen").string(), "--train", "4000", "--min-side", "32", "--max-side", "48"},
                      SIGHUP, [&] { return fs::exists(tmp / "gen/images/train"); }),
            130);
  EXPECT_FALSE(fs::exists(tmp / "gen"));
}

// Runs the tool as user/group 65534 (nobody) when we are root, so file permissions apply; as is
// otherwise. Exit 77 from the child means it could not drop privileges.
CliRun RunUnprivileged(const TempDir& tmp, const std::vector<std::string>& args) {
  CliRun r;
  const std::string exe = (testing::BinaryDir() / "yolocache").string();
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out = ::open((tmp / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open((tmp / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(77);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
  if (pid < 0) return r;
  r.exit_code = WaitWithin(pid, kDeadline);
  r.out = testing::ReadFile(tmp / "stdout");
  r.err = testing::ReadFile(tmp / "stderr");
  return r;
}

TEST(HostileFiles, UnreadableFoldersAreErrorsNotEmptySplits) {
  TempDir tmp;
  fs::permissions(tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  Synth(tmp / "ds", 6);
  // A deeper folder first: images/train/deep/x.jpg behind chmod 000.
  fs::create_directories(tmp / "ds/images/train/deep");
  fs::create_directories(tmp / "ds/labels/train/deep");
  fs::rename(tmp / "ds/images/train/synth_000000.jpg", tmp / "ds/images/train/deep/x.jpg");
  fs::rename(tmp / "ds/labels/train/synth_000000.txt", tmp / "ds/labels/train/deep/x.txt");
  fs::permissions(tmp / "ds/images/train/deep", fs::perms::none);
  const std::string yaml = (tmp / "ds/data.yaml").string();
  CliRun v = RunUnprivileged(tmp, {"verify", yaml, "--json"});
  if (v.exit_code == 77) GTEST_SKIP() << "cannot run as an unprivileged user (setuid failed); skipped";
  EXPECT_EQ(v.exit_code, 1) << v.err;
  nlohmann::json j = nlohmann::json::parse(v.out);
  bool named = false;
  for (const auto& p : j["problems"]) {
    if (p["code"] == "unreadable" && p["file"] == "images/train/deep") {
      named = true;
      EXPECT_EQ(p["severity"], "error");
      EXPECT_EQ(p["message"], "cannot list folder: Permission denied");
    }
  }
  EXPECT_TRUE(named) << v.out;
  // build refuses: a cache silently missing a folder's images is worse than no cache.
  CliRun b = RunUnprivileged(tmp, {"build", yaml, "-o", (tmp / "cache").string()});
  EXPECT_EQ(b.exit_code, 3) << b.err;
  EXPECT_NE(b.err.find("images/train/deep: cannot list folder: Permission denied"), std::string::npos) << b.err;

  // The split's top folder itself.
  fs::permissions(tmp / "ds/images/train", fs::perms::none);
  CliRun t = RunUnprivileged(tmp, {"verify", yaml});
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
  EXPECT_NE(t.out.find("unreadable [train] images/train: cannot list folder: Permission denied"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("FAILED"), std::string::npos) << t.out;
  fs::permissions(tmp / "ds/images/train", fs::perms::owner_all);  // so TempDir can remove it
  fs::permissions(tmp / "ds/images/train/deep", fs::perms::owner_all);
}

TEST(HostileFiles, NonUtf8NamesRoundTripByteExact) {
  TempDir tmp;
  Synth(tmp / "ds", 4);
  const fs::path ds = tmp / "ds";
  const std::string file_name = "\xff.jpg", folder = "caf\xe9";
  fs::copy_file(ds / "images/train/synth_000000.jpg", ds / "images/train" / file_name);
  fs::copy_file(ds / "labels/train/synth_000000.txt", ds / "labels/train/\xff.txt");
  fs::create_directories(ds / "images/train" / folder);
  fs::create_directories(ds / "labels/train" / folder);
  fs::copy_file(ds / "images/train/synth_000001.jpg", ds / "images/train" / folder / "y.jpg");
  fs::copy_file(ds / "labels/train/synth_000001.txt", ds / "labels/train" / folder / "y.txt");
  fs::copy_file(ds / "images/train/synth_000002.jpg", ds / "images/train" / folder / "bad.jpg");
  testing::WriteFile(ds / "labels/train" / folder / "bad.txt", "0 0.5 0.5 0.2\n");  // label-columns
  const std::string yaml = (ds / "data.yaml").string(), cache = (tmp / "cache").string();

  CliRun b = RunCli(tmp, {"build", yaml, "-o", cache, "--imgsz", "64", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_TRUE(nlohmann::json::accept(b.out)) << b.out;
  const nlohmann::json audit = nlohmann::json::parse(testing::ReadFile(tmp / "cache/audit.json"));
  bool bad_found = false;
  for (const auto& p : audit["problems"]) {
    if (p["code"] != "label-columns") continue;
    bad_found = true;
    EXPECT_EQ(p["file"], "labels/train/caf\\xe9/bad.txt");
    std::string exact;
    ASSERT_TRUE(HexToBytes(p["file_hex"].get<std::string>(), &exact));
    EXPECT_EQ(exact, "labels/train/" + folder + "/bad.txt");
  }
  EXPECT_TRUE(bad_found) << audit.dump();

  const Result<Manifest> m = ReadManifest(cache);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::set<std::string> stored;
  for (const SourceFingerprint& f : m->FindSplit("train")->sources) stored.insert(f.path);
  EXPECT_TRUE(stored.count("images/train/" + file_name));
  EXPECT_TRUE(stored.count("images/train/" + folder + "/y.jpg"));

  CliRun v = RunCli(tmp, {"verify", cache, "--source", yaml, "--json"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const nlohmann::json vj = nlohmann::json::parse(v.out);
  EXPECT_TRUE(vj["source_changes"].empty()) << v.out;
  CliRun vt = RunCli(tmp, {"verify", cache, "--source", yaml});
  EXPECT_NE(vt.out.find("0 added, 0 removed, 0 changed"), std::string::npos) << vt.out;

  CliRun s = RunCli(tmp, {"verify", yaml, "--json"});
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_TRUE(nlohmann::json::accept(s.out)) << s.out;
  CliRun st = RunCli(tmp, {"verify", yaml});
  EXPECT_NE(st.out.find("labels/train/caf\\xe9/bad.txt"), std::string::npos) << st.out;
  EXPECT_TRUE(IsUtf8(st.out));
  CliRun i = RunCli(tmp, {"inspect", cache, "--json"});
  EXPECT_EQ(i.exit_code, 0) << i.err;
  EXPECT_TRUE(nlohmann::json::accept(i.out));

  // A removed non-UTF-8 file is reported with its exact name.
  fs::remove(ds / "images/train" / file_name);
  CliRun gone = RunCli(tmp, {"verify", cache, "--source", yaml, "--json"});
  const nlohmann::json gj = nlohmann::json::parse(gone.out);
  ASSERT_EQ(gj["source_changes"].size(), 1u) << gone.out;
  EXPECT_EQ(gj["source_changes"][0]["change"], "removed");
  EXPECT_EQ(gj["source_changes"][0]["file"], "images/train/\\xff.jpg");
  EXPECT_EQ(gj["source_changes"][0]["file_hex"], HexBytes("images/train/" + file_name));
}

}  // namespace
}  // namespace yc
