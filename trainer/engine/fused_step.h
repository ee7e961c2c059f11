// The optimizer step as PyTorch's fused multi-tensor kernels (aten::_fused_adam_, _fused_adamw_,
// _fused_sgd_): one launch per parameter group instead of ~8 per parameter tensor, and a step in which
// the grad scaler found inf/nan is skipped on the device (found_inf), so the training step never waits
// for the GPU. The same arithmetic as torch::optim's Adam, AdamW and SGD (tests/trainer/fused_step_test).
//
// State stays in the torch::optim optimizer (exp_avg, exp_avg_sq, momentum_buffer), so checkpoints and
// resume are unchanged; only Adam's step counts live on the device while training, and SyncState()
// writes them back before the optimizer is serialised.
//
//   FusedStep fused(optimizer);                    // after any optimizer.load(...)
//   scaler.Unscale(optimizer); clip; fused.Step(scaler.found_inf()); scaler.Update(); zero_grad
#pragma once

#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

namespace yc::trainer {

class FusedStep {
 public:
  // Whether this LibTorch has the fused kernels (2.4 and later, CPU and CUDA) and `optimizer` is one they
  // implement: Adam/AdamW without amsgrad, SGD with momentum.
  static bool Supported(const torch::optim::Optimizer& optimizer);

  explicit FusedStep(torch::optim::Optimizer& optimizer);

  // One step with each group's current options (lr, betas, momentum, weight decay). `found_inf`: a
  // 1-element float tensor on the parameters' device, non-zero = skip this step (undefined: always step).
  // Parameters without a gradient are left alone, as torch::optim does. `group_lrs` (null: each group's
  // lr option) holds one float32 scalar per group on the parameters' device, read by the kernels there:
  // a captured step (graphed_step.h) replays with the learning rate written into them in place.
  void Step(const at::Tensor& found_inf, const std::vector<at::Tensor>* group_lrs = nullptr);

  // Copies the device step counts into the optimizer's state (before saving the optimizer).
  void SyncState();

 private:
  enum class Kind { kAdam, kAdamW, kSGD };

  at::Tensor& DeviceStep(const at::Tensor& param, int64_t host_step);

  torch::optim::Optimizer& optimizer_;
  Kind kind_;
  // Adam step counts (float32 scalars on the device, as the kernels read them), by parameter.
  std::unordered_map<const void*, at::Tensor> steps_;
  // Per-group argument lists, refilled every step (their capacity is kept: no allocation).
  std::vector<at::Tensor> params_, grads_, first_, second_, step_list_, found_inf_list_;
};

}  // namespace yc::trainer
