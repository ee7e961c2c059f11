#include "tools/common/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "base/status.h"

namespace yc::cli {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};   // the first signal that set g_interrupted
std::atomic<int> g_polling{0};  // open InterruptPolling scopes
char g_message[128] = "interrupted\n";
size_t g_message_size = std::strlen(g_message);

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the handler reads them: lock-free atomics are async-signal-safe");

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void OnInterrupt(int sig) {
  const bool again = g_interrupted.exchange(true);
  if (!again) g_signal.store(sig);
  if (!again && g_polling.load() > 0) return;  // the work polls the flag
  (void)!::write(STDERR_FILENO, g_message, g_message_size);
  std::_Exit(kExitInterrupted);
}

// Installs OnInterrupt for kSignals; the handlers found go to saved[0..2] when given.
void Install(const char* program, struct sigaction* saved) {
  const char* base = std::strrchr(program, '/');
  std::snprintf(g_message, sizeof g_message, "%.100s: interrupted\n", base != nullptr ? base + 1 : program);
  g_message_size = std::strlen(g_message);
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &sa, saved != nullptr ? &saved[i] : nullptr);
}

}  // namespace

void InstallInterruptHandling(const char* program) { Install(program, nullptr); }

InProcessInterrupts::InProcessInterrupts(const char* program) {
  static_assert(sizeof saved_ / sizeof saved_[0] == std::size(kSignals), "one saved handler per signal");
  g_interrupted.store(false);  // an earlier scope's signal is not this one's
  g_signal.store(0);
  Install(program, saved_);
}

InProcessInterrupts::~InProcessInterrupts() {
  for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
}

int InProcessInterrupts::signal() const { return g_signal.load(); }

InterruptPolling::InterruptPolling() { g_polling.fetch_add(1); }

InterruptPolling::~InterruptPolling() { g_polling.fetch_sub(1); }

const std::atomic<bool>* InterruptFlag() { return &g_interrupted; }

int InterruptSignal() { return g_interrupted.load() ? g_signal.load() : 0; }

const std::atomic<bool>* InterruptPolling::flag() const { return InterruptFlag(); }

const std::atomic<bool>* InstallInterruptFlag() {
  static InterruptPolling* const forever = new InterruptPolling();  // never left: the command polls to its end
  return forever->flag();
}

}  // namespace yc::cli
