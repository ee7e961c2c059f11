#include "tests/test_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "libcache/source/synth.h"

extern char** environ;

namespace yc::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  const fs::path base = fs::temp_directory_path();
  for (;;) {
    fs::path candidate = base / ("yolocache-test-" + std::to_string(rd()));
    if (fs::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path SharedData(const std::string& name) {
  fs::path p = fs::path(YOLOCACHE_SHARED_DATA) / name;
  std::error_code ec;
  return fs::is_directory(p, ec) ? p : fs::path();
}

fs::path BinaryDir() { return fs::path(YOLOCACHE_BINARY_DIR) / "tools"; }

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> TreeSnapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = it->path().lexically_relative(dir).string();
    if (it->is_symlink()) out[rel] = "-> " + fs::read_symlink(it->path()).string();
    else if (it->is_directory()) out[rel] = "<dir>";
    else out[rel] = ReadFile(it->path());
  }
  return out;
}

pid_t SpawnTool(const std::string& tool, const std::vector<std::string>& args, const fs::path& out,
                const fs::path& err, const fs::path& cwd) {
  const std::string exe = (BinaryDir() / tool).string();
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  if (posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
    ADD_FAILURE() << "cannot run " << exe;
    pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

CliRun RunTool(const std::string& tool, const fs::path& dir, const std::vector<std::string>& args) {
  CliRun r;
  const pid_t pid = SpawnTool(tool, args, dir / "stdout", dir / "stderr", dir);
  if (pid < 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(dir / "stdout");
  r.err = ReadFile(dir / "stderr");
  return r;
}

std::vector<RankRun> LaunchRanks(const std::string& exe, int world, const std::vector<std::string>& args,
                                 const fs::path& dir, int port, std::chrono::seconds deadline,
                                 const std::string& log_prefix) {
  std::vector<std::string> base_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "MASTER_ADDR" ||
        key == "MASTER_PORT" || key.rfind("TORCHELASTIC_", 0) == 0 || key == "OMP_NUM_THREADS") {
      continue;
    }
    base_env.push_back(kv);
  }
  base_env.push_back("OMP_NUM_THREADS=1");
  const int n = std::max(world, 1);
  std::vector<pid_t> pids(n, -1);
  std::vector<RankRun> runs(n);
  std::vector<fs::path> logs(n);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env = base_env;
    if (world > 0) {
      env.push_back("RANK=" + std::to_string(r));
      env.push_back("LOCAL_RANK=" + std::to_string(r));
      env.push_back("WORLD_SIZE=" + std::to_string(world));
      env.push_back("MASTER_ADDR=127.0.0.1");
      env.push_back("MASTER_PORT=" + std::to_string(port));
    }
    std::vector<std::string> argv_s{exe};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& v : env) envp.push_back(v.data());
    envp.push_back(nullptr);
    logs[r] = dir / (log_prefix + "rank" + std::to_string(r) + ".log");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logs[r].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pids[r], exe.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) pids[r] = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  const auto end = std::chrono::steady_clock::now() + deadline;
  int remaining = 0;
  for (pid_t p : pids) remaining += p > 0 ? 1 : 0;
  while (remaining > 0 && std::chrono::steady_clock::now() < end) {
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (pids[r] > 0 && ::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        runs[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = -1;
        --remaining;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < n; ++r) {
    if (pids[r] > 0) {
      ::kill(pids[r], SIGKILL);
      ::waitpid(pids[r], nullptr, 0);
      runs[r].log = "(killed after " + std::to_string(deadline.count()) + " s)\n";
    }
    runs[r].log += ReadFile(logs[r]);
  }
  return runs;
}

std::vector<RankRun> LaunchRanksOnFreePort(const std::string& exe, int world, const std::vector<std::string>& args,
                                           const fs::path& dir, std::chrono::seconds deadline,
                                           const std::string& log_prefix) {
  std::vector<RankRun> runs;
  for (int attempt = 0; attempt < 3; ++attempt) {
    runs = LaunchRanks(exe, world, args, dir, FreeLoopbackPort(), deadline, log_prefix);
    bool clash = false;
    for (const RankRun& r : runs) clash |= r.log.find("ddress already in use") != std::string::npos;
    if (!clash) break;
  }
  return runs;
}

fs::path TinySynthDataset(const fs::path& dir) {
  SynthOptions o;
  o.train_images = 8;
  o.val_images = 4;
  o.min_side = 64;
  o.max_side = 96;
  o.background_fraction = 0;
  const Result<SynthReport> r = GenerateSynthDataset(dir, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return dir / "data.yaml";
}

void FlipFirstRecordPixel(const fs::path& shard) {
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  const std::streamoff record = 64;  // the first record follows the 64-byte shard header
  unsigned char off[4] = {};
  f.seekg(record + 56);  // the record header's pixel_offset (docs/FORMAT.md)
  f.read(reinterpret_cast<char*>(off), 4);
  const std::streamoff pixel = record + (off[0] | off[1] << 8 | off[2] << 16 | off[3] << 24) + 10;
  char c = 0;
  f.seekg(pixel);
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x01);
  f.seekp(pixel);
  f.write(&c, 1);
  EXPECT_TRUE(f.good()) << shard;
}

}  // namespace yc::testing
