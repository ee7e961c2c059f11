#include "trainer/engine/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "trainer/engine/optimizer.h"

namespace yc::trainer {

namespace {

// np.interp(x, [0, x1], [y0, y1]) for 0 <= x <= x1, clamped outside.
double Lerp(double x, double x1, double y0, double y1) {
  if (x1 <= 0 || x >= x1) return y1;
  if (x <= 0) return y0;
  return y0 + (y1 - y0) * (x / x1);
}

}  // namespace

double LrSchedule::Factor(int64_t epoch) const {
  const double e = static_cast<double>(epoch);
  const double n = static_cast<double>(std::max<int64_t>(options_.epochs, 1));
  if (options_.cos_lr) {
    return std::max((1.0 - std::cos(e * M_PI / n)) / 2.0, 0.0) * (options_.lrf - 1.0) + 1.0;
  }
  return std::max(1.0 - e / n, 0.0) * (1.0 - options_.lrf) + options_.lrf;
}

int64_t LrSchedule::WarmupIterations(int64_t nb) const {
  if (options_.warmup_epochs <= 0) return -1;
  return std::max<int64_t>(static_cast<int64_t>(std::nearbyint(options_.warmup_epochs * static_cast<double>(nb))), 100);
}

StepSettings LrSchedule::At(int64_t epoch, int64_t ni, int64_t nb, double initial_lr) const {
  StepSettings s;
  const double target = initial_lr * Factor(epoch);
  const double full_accumulate =
      std::max(std::nearbyint(static_cast<double>(options_.nbs) / static_cast<double>(std::max<int64_t>(options_.batch, 1))), 1.0);
  const int64_t nw = WarmupIterations(nb);
  if (nw >= 0 && ni <= nw) {
    const double x = static_cast<double>(ni), x1 = static_cast<double>(nw);
    s.warmup = true;
    // int(np.interp(...).round()): numpy rounds half to even, like nearbyint.
    const double acc = Lerp(x, x1, 1.0, static_cast<double>(options_.nbs) / static_cast<double>(std::max<int64_t>(options_.batch, 1)));
    s.accumulate = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(acc)));
    for (size_t j = 0; j < s.lr.size(); ++j) s.lr[j] = Lerp(x, x1, j == 0 ? options_.warmup_bias_lr : 0.0, target);
    s.momentum = Lerp(x, x1, options_.warmup_momentum, options_.momentum);
    s.set_momentum = true;
    return s;
  }
  s.accumulate = static_cast<int64_t>(full_accumulate);
  s.lr.fill(target);
  return s;
}

void ApplyStepSettings(torch::optim::Optimizer& optimizer, const StepSettings& settings) {
  for (size_t j = 0; j < settings.lr.size(); ++j) {
    SetLearningRate(optimizer, j, settings.lr[j]);
    if (settings.set_momentum) SetMomentum(optimizer, j, settings.momentum);
  }
}

}  // namespace yc::trainer
