#include "loader/base/worker_stats.h"

#include <tbb/task_arena.h>

#include <algorithm>

namespace yc {

WorkerStats::WorkerStats(int workers) : slots_(new Slot[std::max(workers, 1)]), workers_(std::max(workers, 1)) {}

WorkerStats::Slot& WorkerStats::Mine() {
  // Arena slots are 0..workers-1; anything else (a thread outside the arena) shares a slot, which
  // the lock keeps correct.
  const int index = tbb::this_task_arena::current_thread_index();
  return slots_[static_cast<unsigned>(index) % static_cast<unsigned>(workers_)];
}

void WorkerStats::BeginSample(const CoreClockSample* clock) {
  Slot& s = Mine();
  std::lock_guard<std::mutex> lock(s.mu);
  if (clock != nullptr) {
    s.done.clock_cycles += clock->cycles;
    s.done.clock_seconds += clock->seconds;
  }
  s.started = Clock::now();
  s.running = true;
}

void WorkerStats::EndSample(double render_seconds, double finish_seconds) {
  Slot& s = Mine();
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.done.samples;
  s.done.sample_seconds += std::chrono::duration<double>(now - s.started).count();
  s.done.render_seconds += render_seconds;
  s.done.finish_seconds += finish_seconds;
  s.running = false;
}

LoaderStats WorkerStats::Snapshot() const {
  const Clock::time_point now = Clock::now();
  LoaderStats sum;
  for (int i = 0; i < workers_; ++i) {
    const Slot& s = slots_[i];
    std::lock_guard<std::mutex> lock(s.mu);
    sum.samples += s.done.samples;
    sum.sample_seconds += s.done.sample_seconds;
    sum.render_seconds += s.done.render_seconds;
    sum.finish_seconds += s.done.finish_seconds;
    sum.clock_cycles += s.done.clock_cycles;
    sum.clock_seconds += s.done.clock_seconds;
    sum.busy_seconds += s.done.sample_seconds;
    // A sample that began after `now` (between it and this lock) has no part in this snapshot.
    if (s.running && s.started < now) sum.busy_seconds += std::chrono::duration<double>(now - s.started).count();
  }
  return sum;
}

}  // namespace yc
