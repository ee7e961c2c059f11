// Ultralytics' learning-rate schedule and warmup (engine/trainer.py): a per-epoch factor lf(epoch)
// (linear 1 -> lrf, or cosine one_cycle), and for the first nw = max(round(warmup_epochs * nb), 100)
// iterations a linear ramp of every group's lr (bias group 0 from warmup_bias_lr, the others from 0) to
// lr0 * lf(epoch), of momentum from warmup_momentum to momentum, and of gradient accumulation from 1 to
// round(nbs / batch).
//
//   LrSchedule sched(opts);
//   for each batch: auto s = sched.At(epoch, ni, nb, spec.lr); ApplyStepSettings(*optimizer, s);
#pragma once

#include <array>
#include <cstdint>

#include <torch/optim/optimizer.h>

namespace yc::trainer {

struct LrScheduleOptions {
  int64_t epochs = 100;
  double lrf = 0.01;             // final lr = lr0 * lrf
  bool cos_lr = false;
  double warmup_epochs = 3.0;    // <= 0: no warmup
  double warmup_momentum = 0.8;
  double warmup_bias_lr = 0.1;   // OptimizerSpec::warmup_bias_lr (0 after the "auto" rule)
  double momentum = 0.937;       // the configured momentum (the warmup target, even after "auto")
  int64_t nbs = 64;              // nominal batch size
  int64_t batch = 16;
};

struct StepSettings {
  std::array<double, 3> lr{};  // per Ultralytics group: 0 biases, 1 weights, 2 norm weights
  double momentum = 0;
  bool set_momentum = false;   // true during warmup only
  int64_t accumulate = 1;      // optimizer step every `accumulate` batches
  bool warmup = false;
};

class LrSchedule {
 public:
  explicit LrSchedule(LrScheduleOptions options) : options_(options) {}

  // lf(epoch): linear max(1 - e / epochs, 0) * (1 - lrf) + lrf, or cosine
  // max((1 - cos(e * pi / epochs)) / 2, 0) * (lrf - 1) + 1.
  double Factor(int64_t epoch) const;
  // Warmup length in iterations for nb batches per epoch, or -1 when warmup is off.
  int64_t WarmupIterations(int64_t nb) const;
  // Settings for global iteration ni = batch_index + nb * epoch; initial_lr is the optimizer's lr0.
  StepSettings At(int64_t epoch, int64_t ni, int64_t nb, double initial_lr) const;

  const LrScheduleOptions& options() const { return options_; }
  // Ultralytics' time= re-creates its LambdaLR with the recomputed epoch count (its _setup_scheduler).
  void set_epochs(int64_t epochs) { options_.epochs = epochs; }

 private:
  LrScheduleOptions options_;
};

// Writes lr (and during warmup momentum, where the optimizer has one) into the first three groups.
void ApplyStepSettings(torch::optim::Optimizer& optimizer, const StepSettings& settings);

}  // namespace yc::trainer
