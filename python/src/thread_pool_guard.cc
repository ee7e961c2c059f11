// TBB's worker threads do not survive fork(): the child inherits a thread pool whose threads are gone,
// and any TBB work there waits forever. The first process that uses the pool (a Loader, build, verify)
// is recorded; a process forked from it gets yolocache.Error instead of a hang.
#include <unistd.h>

#include <atomic>
#include <string>

#include "python/src/bindings.h"

namespace yc::py {
namespace {
std::atomic<pid_t> g_pool_pid{0};  // copied into a forked child as it was: the parent's pid
}  // namespace

void UseThreadPool(const char* what) {
  const pid_t me = getpid();
  pid_t expected = 0;
  if (g_pool_pid.compare_exchange_strong(expected, me) || expected == me) return;
  ThrowIfError(Status::IOError(
      std::string(what) + " cannot run in a process forked (os.fork, multiprocessing's default 'fork' start method, "
      "a torch DataLoader worker) from process " + std::to_string(expected) +
      ", which already ran yolocache's worker threads: they do not survive fork. Create the Loader in the process "
      "that iterates it, started with the 'spawn' or 'forkserver' method, or before the parent runs any"));
}

}  // namespace yc::py
