// Ctrl-C (SIGINT), kill (SIGTERM) and a closed terminal (SIGHUP) for both CLIs, honoured from the first
// line of main:
//
//   int main(...) { cli::InstallInterruptHandling("yolocache-train"); ... }
//   ...
//   cli::InterruptPolling polling;        // the work below polls the flag, stops and cleans up
//   options.cancel = polling.flag();
//
// Inside an InterruptPolling scope a signal only sets the flag: the work sees it at its next check,
// removes what it had started (a cache's staging dir, a partial output; train saves a resumable last.pt)
// and the command exits 130. Outside one (parsing, loading weights, an export) nothing would look at the
// flag, so the signal ends the process at once with exit 130 rather than waiting for work that does not
// check it; so does a second signal anywhere (the work asked to stop may be stuck). A temp file left by
// such an exit has our naming and is removed by the next command writing there (libcache/base/pid_files.h).
#pragma once

#include <signal.h>

#include <atomic>

namespace yc::cli {

// Installs the handlers (SA_RESTART: a signal never fails an ordinary write with EINTR). `program`
// names the process in the one line ("<program>: interrupted") printed when it exits at once.
void InstallInterruptHandling(const char* program);

// The flag a signal sets (cleared only by InProcessInterrupts).
const std::atomic<bool>* InterruptFlag();
// The signal that set it (SIGINT, SIGTERM or SIGHUP), 0 while it is not set: a launcher forwards that one.
int InterruptSignal();

class InterruptPolling {
 public:
  InterruptPolling();
  ~InterruptPolling();
  InterruptPolling(const InterruptPolling&) = delete;
  InterruptPolling& operator=(const InterruptPolling&) = delete;
  const std::atomic<bool>* flag() const;
  bool interrupted() const { return flag()->load(); }
};

// For a caller that runs commands inside a process that outlives them (the Python module: its own
// handlers must come back, and a Ctrl-C must not end the interpreter): for this object's lifetime, the
// handlers above with the flag cleared and polled throughout, so a first signal only sets the flag
// (work that does not check it, such as loading weights, runs on to the next check); a second one
// still ends the process at once. Then the handlers that were there before. One at a time per process.
class InProcessInterrupts {
 public:
  explicit InProcessInterrupts(const char* program);
  ~InProcessInterrupts();
  InProcessInterrupts(const InProcessInterrupts&) = delete;
  InProcessInterrupts& operator=(const InProcessInterrupts&) = delete;
  // The first signal that came in this scope (SIGINT, SIGTERM or SIGHUP), 0 when none did.
  int signal() const;

 private:
  struct sigaction saved_[3] = {};
  InterruptPolling polling_;
};

// For a command that polls the flag from here to its end (the `yolocache` subcommands): an
// InterruptPolling scope that is never left. Returns the flag.
const std::atomic<bool>* InstallInterruptFlag();

}  // namespace yc::cli
