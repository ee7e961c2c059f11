// Where one training step's time goes (`yolocache-train ceiling --profile`): forward, the loss, its TAL
// assigner, backward, and the optimizer step with unscale, clip, loss-scale update and EMA. TrainStep
// calls Start() when a part begins and Stop(part) when it ends; each synchronises the device, so a part's
// figure is its own kernels' time plus its launch overhead, with nothing of the neighbouring parts
// overlapped into it. That makes the parts' sum larger than the unprofiled step, which the ceiling prints
// beside it.
//
//   StepProfile profile(device);
//   step.set_profile(&profile);   ... steps ...   step.set_profile(nullptr);
//   profile.MillisecondsPerBatch(StepPart::kBackward)
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include <ATen/ATen.h>

namespace yc::trainer {

// kLoss: the loss without its assigner (targets, head outputs, the three terms); kAssigner: the assigner
// (DetectionLoss's AssignerMarks), with the scores' sigmoid and the boxes' scaling it is handed.
enum class StepPart { kForward = 0, kLoss, kAssigner, kBackward, kOptimizer };
inline constexpr int kStepParts = 5;
const char* StepPartName(StepPart part);  // "forward", "loss", "assigner", "backward", "optimizer"

class StepProfile {
 public:
  explicit StepProfile(const at::Device& device) : device_(device) {}

  void Start();
  void Stop(StepPart part);
  // One batch's forward and backward ended (the optimizer part, once per accumulation, is spread
  // over its batches).
  void CountBatch() { ++batches_; }

  int64_t batches() const { return batches_; }
  double MillisecondsPerBatch(StepPart part) const;
  double TotalMillisecondsPerBatch() const;

 private:
  using Clock = std::chrono::steady_clock;
  at::Device device_;
  Clock::time_point started_;
  std::array<double, kStepParts> seconds_{};
  int64_t batches_ = 0;
};

}  // namespace yc::trainer
