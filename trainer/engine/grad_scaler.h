// Dynamic loss scaling for fp16 autocast (torch.amp.GradScaler semantics; LibTorch has no C++ one):
// scale the loss, unscale gradients in place while flagging non-finite values, skip the optimizer step
// when any were found, then grow the scale x2 after 2000 clean steps or back it off x0.5 on overflow.
//
// Built on aten::_amp_foreach_non_finite_check_and_unscale_ and aten::_amp_update_scale_ (no host sync).
// Those have no CPU kernels before LibTorch 2.3 (Debian's 1.13); there the same arithmetic runs as plain
// tensor ops. bf16 training needs no scaler.
//
//   scaler.Scale(loss).backward();
//   if (step) { scaler.Unscale(opt); clip; scaler.Step(opt); scaler.Update(); opt.zero_grad(); }
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"

namespace yc::trainer {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;  // disabled: Scale is the identity and Step always steps
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (the scale tensor is created on the loss's device on first use).
  at::Tensor Scale(const at::Tensor& loss);
  // Divides every gradient of the optimizer's parameters by the scale and records whether any was
  // inf/nan. Once per step; later calls before Update are no-ops. fp16 gradients are refused (master
  // weights must be fp32), as in PyTorch.
  Status Unscale(torch::optim::Optimizer& optimizer);
  // Unscale if not done yet, then optimizer.step() unless a non-finite gradient was found. Reads the flag
  // on the host (one sync, as PyTorch's GradScaler.step). Returns whether the step ran.
  Result<bool> Step(torch::optim::Optimizer& optimizer);
  // Adjusts the scale from this step's flag and resets the per-step state.
  void Update();

  // Device tensors for sync-free use (e.g. a fused optimizer that takes found_inf).
  const at::Tensor& scale() const { return scale_; }
  const at::Tensor& found_inf() const { return found_inf_; }
  const at::Tensor& growth_tracker() const { return growth_tracker_; }
  double scale_value() const;  // host read (sync), for logging and tests
  int64_t growth_value() const;  // host read (sync), for checkpoints
  // Restores the dynamic scale and growth counter (a resumed run) on `device`.
  void LoadState(double scale, int64_t growth_tracker, const at::Device& device);
  bool enabled() const { return options_.enabled; }

  // Lower-level forms on plain tensors (tests, custom optimizers). found_inf: 1-element float32, pre-zeroed
  // by the caller; inv_scale: 1-element float32.
  static void UnscaleGrads(std::vector<at::Tensor>& grads, at::Tensor& found_inf, const at::Tensor& inv_scale);
  static void UpdateScale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval);

 private:
  void LazyInit(const at::Device& device);

  GradScalerOptions options_;
  at::Tensor scale_;           // float32 (1,)
  at::Tensor growth_tracker_;  // int32 (1,)
  at::Tensor found_inf_;       // float32 (1,)
  bool unscaled_ = false;
  std::vector<at::Tensor> grads_;  // reused between steps
};

}  // namespace yc::trainer
