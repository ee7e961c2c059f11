#include "trainer/engine/step_profile.h"

#include "trainer/runtime/device_feed.h"

namespace yc::trainer {

const char* StepPartName(StepPart part) {
  switch (part) {
    case StepPart::kForward: return "forward";
    case StepPart::kLoss: return "loss";
    case StepPart::kAssigner: return "assigner";
    case StepPart::kBackward: return "backward";
    case StepPart::kOptimizer: return "optimizer";
  }
  return "?";
}

void StepProfile::Start() {
  SynchronizeDevice(device_);  // the previous part's kernels are not this one's
  started_ = Clock::now();
}

void StepProfile::Stop(StepPart part) {
  SynchronizeDevice(device_);
  seconds_[static_cast<size_t>(part)] += std::chrono::duration<double>(Clock::now() - started_).count();
}

double StepProfile::MillisecondsPerBatch(StepPart part) const {
  return batches_ > 0 ? 1e3 * seconds_[static_cast<size_t>(part)] / static_cast<double>(batches_) : 0.0;
}

double StepProfile::TotalMillisecondsPerBatch() const {
  double total = 0;
  for (int p = 0; p < kStepParts; ++p) total += MillisecondsPerBatch(static_cast<StepPart>(p));
  return total;
}

}  // namespace yc::trainer
