// Ultralytics' time= (engine/trainer.py _do_train): a training budget in hours that overrides epochs.
// The clock starts when the epoch loop starts (train_time_start; a resumed run gets the whole budget
// again, as Ultralytics' does); the run stops after the optimizer step that finds it spent, and after
// every epoch the epoch count becomes ceil(budget / mean epoch time of this session).
//
//   TimeBudget budget(o.time);  budget.Start();
//   after a step: if (budget.Exceeded()) break;
//   after an epoch: o.epochs = budget.Epochs(epochs_this_session);
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

namespace yc::trainer {

class TimeBudget {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TimeBudget(double hours = 0) : seconds_(hours * 3600.0) {}

  bool enabled() const { return seconds_ > 0; }
  double seconds() const { return seconds_; }
  void Start(Clock::time_point now = Clock::now()) { start_ = now; }
  double Elapsed(Clock::time_point now = Clock::now()) const {
    return std::chrono::duration<double>(now - start_).count();
  }
  // (now - start) > time * 3600, as Ultralytics compares.
  bool Exceeded(Clock::time_point now = Clock::now()) const { return enabled() && Elapsed(now) > seconds_; }
  // math.ceil(time * 3600 / mean_epoch_time) over `epochs_done` (>= 1) epochs of this session; at least 1.
  int Epochs(int epochs_done, Clock::time_point now = Clock::now()) const {
    const double mean = Elapsed(now) / std::max(epochs_done, 1);
    if (!(mean > 0)) return INT_MAX;
    return static_cast<int>(std::clamp(std::ceil(seconds_ / mean), 1.0, static_cast<double>(INT_MAX)));
  }

 private:
  double seconds_;
  Clock::time_point start_ = Clock::now();
};

}  // namespace yc::trainer
