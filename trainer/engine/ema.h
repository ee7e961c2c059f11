// Exponential moving average of a model's weights and buffers (Ultralytics ModelEMA): a deep copy in
// eval mode, updated after every optimizer step with decay d = decay * (1 - exp(-updates / tau)), which
// ramps from 0 so early epochs are not dominated by the random init. Every floating-point parameter and
// buffer is averaged (BatchNorm running stats included; the integer num_batches_tracked is skipped).
// Uses _foreach ops: two launches per update on CUDA rather than two per tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "base/status.h"

namespace yc::trainer {

class ModelEMA {
 public:
  // model must be Cloneable (YOLOv8 is). The copy lives on the model's device.
  explicit ModelEMA(const torch::nn::Module& model, double decay = 0.9999, double tau = 2000.0, int64_t updates = 0);

  // ema = d * ema + (1 - d) * model, after incrementing the update count. The model's tensors are looked
  // up once per model object and reused; a model whose state names differ is an InvalidArgument.
  Status Update(const torch::nn::Module& model);

  // The same update as work a CUDA graph records once and replays (trainer/engine/graphed_step.h): the
  // update count lives in a device scalar, so each replay applies its own decay. Around each replay
  // (and before the capture): LoadDeviceCount() copies the host count into that scalar; the recorded
  // UpdateOnDevice() adds one there and computes d on the device (fp32: within 1e-7 of the host's
  // double); CountDeviceUpdate() counts the replayed update on the host.
  void LoadDeviceCount();
  Status UpdateOnDevice(const torch::nn::Module& model);
  void CountDeviceUpdate() { ++updates_; }

  static double DecayAt(int64_t updates, double decay, double tau);
  double CurrentDecay() const { return DecayAt(updates_, decay_, tau_); }
  int64_t updates() const { return updates_; }

  const std::shared_ptr<torch::nn::Module>& module() const { return ema_; }
  template <typename Impl>
  std::shared_ptr<Impl> as() const {
    return std::dynamic_pointer_cast<Impl>(ema_);
  }

 private:
  std::shared_ptr<torch::nn::Module> ema_;
  double decay_, tau_;
  int64_t updates_;
  std::vector<std::string> names_;  // floating params + buffers, in ema_ order
  std::vector<at::Tensor> dst_;
  std::vector<at::Tensor> src_;
  const torch::nn::Module* src_owner_ = nullptr;
  at::Tensor device_updates_;  // UpdateOnDevice's count (float32 scalar on the EMA's device)

  Status BindSource(const torch::nn::Module& model);
};

}  // namespace yc::trainer
