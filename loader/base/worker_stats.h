// Loader::stats()'s accounting. Each worker keeps its own record, updated under its own lock once at
// the start and once at the end of a sample, so a snapshot sees every finished sample whole (its
// total with its stages: a shared set of atomics let a snapshot land between a sample's total and
// its stages) and knows when each sample in progress began, so the busy time can be cut at the
// snapshot's moment. Two uncontended locks per ~1 ms sample cost nothing measurable.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "loader/base/core_clock.h"
#include "loader/stats.h"

namespace yc {

class WorkerStats {
 public:
  // `workers`: the arena's slots (tbb::this_task_arena::current_thread_index() is below it).
  explicit WorkerStats(int workers);

  // Around one sample, on the worker running it. `clock`: the core-clock probe taken before it, or null.
  void BeginSample(const CoreClockSample* clock);
  void EndSample(double render_seconds, double finish_seconds);

  // The sum over workers, busy time counted up to now.
  LoaderStats Snapshot() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct alignas(64) Slot {  // one cache line apart: workers never share one
    mutable std::mutex mu;
    LoaderStats done;  // finished samples; done.busy_seconds stays 0
    Clock::time_point started;
    bool running = false;
  };
  Slot& Mine();

  std::unique_ptr<Slot[]> slots_;
  int workers_;
};

}  // namespace yc
