#include "trainer/distributed/rank_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

extern char** environ;

namespace yc::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Variables a rank reads about its launch: an enclosing launch's (this process may itself run under
// torchrun's agent without being a rank) are not passed on.
bool IsLaunchVariable(const std::string& key) {
  static const char* const kKeys[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                      "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE",
                                      "MASTER_ADDR", "MASTER_PORT"};
  for (const char* k : kKeys) {
    if (key == k) return true;
  }
  return key.rfind("TORCHELASTIC_", 0) == 0;
}

// The environment of rank `rank`: this process's, less launch variables, plus torchrun's worker set.
std::vector<std::string> RankEnvironment(int rank, int world, int port) {
  std::vector<std::string> env;
  bool has_omp = false, has_nccl_async = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (IsLaunchVariable(key)) continue;
    has_omp |= key == "OMP_NUM_THREADS";
    has_nccl_async |= key == "TORCH_NCCL_ASYNC_ERROR_HANDLING";
    env.push_back(kv);
  }
  const std::string r = std::to_string(rank), w = std::to_string(world);
  env.insert(env.end(), {"RANK=" + r, "LOCAL_RANK=" + r, "GROUP_RANK=0", "ROLE_RANK=" + r, "ROLE_NAME=default",
                          "LOCAL_WORLD_SIZE=" + w, "WORLD_SIZE=" + w, "GROUP_WORLD_SIZE=1", "ROLE_WORLD_SIZE=" + w,
                          "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port),
                          "TORCHELASTIC_RESTART_COUNT=0", "TORCHELASTIC_MAX_RESTARTS=0",
                          "TORCHELASTIC_RUN_ID=yolocache-" + std::to_string(::getpid()),
                          "TORCHELASTIC_USE_AGENT_STORE=False"});
  if (!has_omp) env.emplace_back("OMP_NUM_THREADS=1");
  if (!has_nccl_async) env.emplace_back("TORCH_NCCL_ASYNC_ERROR_HANDLING=1");
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// fork + exec, so that the child can join its own process group and ask for SIGTERM when the launcher
// dies before it execs (posix_spawn has no PR_SET_PDEATHSIG). Between fork and exec only
// async-signal-safe calls: the launcher may have threads (the loader's, LibTorch's).
Result<int> StartRank(const std::string& executable, std::vector<char*>& argv, std::vector<char*>& envp) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IOError(std::string("cannot start a rank: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the launcher died before the line above
    // The rank starts with the default handling of the stop signals whatever this process inherited
    // (a shell's `&` ignores SIGINT): it installs its own, and a forwarded signal must reach it.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    ::execve(executable.c_str(), argv.data(), envp.data());
    static const char kMessage[] = "rank launcher: cannot execute the rank's program\n";
    (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here: the group exists whichever of the two runs first
  return static_cast<int>(pid);
}

int ExitCodeOf(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// The name of the signals a rank meets here (sigabbrev_np needs glibc 2.32).
std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    default: return "signal " + std::to_string(sig);
  }
}

std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) return "killed by " + SignalName(WTERMSIG(status)) + ", exit " + std::to_string(ExitCodeOf(status));
  return "exit " + std::to_string(ExitCodeOf(status));
}

// The ranks started, and what is known of them.
class RankSet {
 public:
  explicit RankSet(int world) : exits_(static_cast<size_t>(world)), status_(static_cast<size_t>(world), -1) {}

  void Started(int rank, int pid) { exits_[static_cast<size_t>(rank)].pid = pid; }
  int size() const { return static_cast<int>(exits_.size()); }
  bool Running(int rank) const { return exits_[static_cast<size_t>(rank)].pid > 0 && status_[static_cast<size_t>(rank)] < 0; }
  int Alive() const {
    int n = 0;
    for (int r = 0; r < size(); ++r) n += Running(r) ? 1 : 0;
    return n;
  }
  // Reaps rank `rank` when it has ended; its wait status, or -1 while it runs.
  int Poll(int rank) {
    if (!Running(rank)) return -1;
    int status = 0;
    if (::waitpid(exits_[static_cast<size_t>(rank)].pid, &status, WNOHANG) != exits_[static_cast<size_t>(rank)].pid) return -1;
    status_[static_cast<size_t>(rank)] = status;
    exits_[static_cast<size_t>(rank)].exit_code = ExitCodeOf(status);
    return status;
  }
  void Signal(int sig) {
    for (int r = 0; r < size(); ++r) {
      if (Running(r)) ::kill(exits_[static_cast<size_t>(r)].pid, sig);
    }
  }
  void KillAndReap() {
    Signal(SIGKILL);
    for (int r = 0; r < size(); ++r) {
      while (Running(r) && Poll(r) < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  const std::vector<RankExit>& exits() const { return exits_; }

 private:
  std::vector<RankExit> exits_;
  std::vector<int> status_;  // wait status once reaped, else -1
};

}  // namespace

Result<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::IOError(std::string("free port: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return Status::IOError(std::string("free port on 127.0.0.1: ") + std::strerror(err));
  return static_cast<int>(ntohs(addr.sin_port));
}

Result<LaunchOutcome> LaunchLocalRanks(const RankLaunch& launch, const std::function<int()>& pending_signal,
                                       const std::function<void(const std::string&)>& say) {
  if (launch.world_size < 1 || launch.executable.empty() || launch.argv.empty()) {
    return Status::InvalidArgument("rank launch: needs a program, its argv and a world size >= 1");
  }
  int port = launch.master_port;
  if (port == 0) {
    YC_ASSIGN_OR_RETURN(port, FreeLoopbackPort());
  }
  RankSet ranks(launch.world_size);
  std::vector<std::string> argv_strings = launch.argv;
  std::vector<char*> argv = Pointers(argv_strings);
  std::string pids;
  for (int r = 0; r < launch.world_size; ++r) {
    std::vector<std::string> env_strings = RankEnvironment(r, launch.world_size, port);
    std::vector<char*> envp = Pointers(env_strings);
    Result<int> pid = StartRank(launch.executable, argv, envp);
    if (!pid.ok()) {
      ranks.KillAndReap();
      return Status(pid.status()).WithContext("rank " + std::to_string(r));
    }
    ranks.Started(r, *pid);
    pids += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + " pid " + std::to_string(*pid);
  }
  say("DDP: " + std::to_string(launch.world_size) + " ranks on MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
      std::to_string(port) + " (" + pids + ")");

  LaunchOutcome out;
  std::optional<Clock::time_point> kill_at;  // set once the others were asked to stop after a failure
  while (ranks.Alive() > 0) {
    if (const int sig = pending_signal ? pending_signal() : 0; sig != 0 && !out.interrupted) {
      out.interrupted = true;
      say("DDP: " + SignalName(sig) + " forwarded to the ranks; they stop at their next batch");
      ranks.Signal(sig);
    }
    for (int r = 0; r < ranks.size(); ++r) {
      const int status = ranks.Poll(r);
      if (status < 0 || ExitCodeOf(status) == 0 || out.failed_rank >= 0 || out.interrupted) continue;
      out.failed_rank = r;
      out.exit_code = ExitCodeOf(status);
      say("DDP: rank " + std::to_string(r) + " failed (" + HowItEnded(status) + ")" +
          (ranks.Alive() > 0 ? "; stopping the other ranks" : ""));
      ranks.Signal(SIGTERM);
      kill_at = Clock::now() + launch.grace;
    }
    if (kill_at && Clock::now() >= *kill_at && ranks.Alive() > 0) {
      say("DDP: ranks still running " + std::to_string(launch.grace.count()) + " ms after SIGTERM: killed");
      ranks.KillAndReap();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.ranks = ranks.exits();
  if (out.interrupted) out.exit_code = kExitInterrupted;
  return out;
}

}  // namespace yc::trainer
