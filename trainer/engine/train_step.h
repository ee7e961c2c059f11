// One training step of the training loop, shared by Train() and the ceiling probe: forward under autocast,
// detection loss, scaled backward (gradients all-reduced under DDP), and, when due, Ultralytics'
// optimizer_step (unscale, clip the gradient norm to 10, step or skip on inf/nan, scale update, zero
// grads, EMA update).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"
#include "trainer/config/train_options.h"
#include "trainer/distributed/grad_reducer.h"
#include "trainer/engine/ema.h"
#include "trainer/engine/fused_step.h"
#include "trainer/engine/grad_scaler.h"
#include "trainer/engine/graphed_step.h"
#include "trainer/engine/step_profile.h"
#include "trainer/engine/teacher.h"
#include "trainer/loss/distill_loss.h"
#include "trainer/loss/loss.h"
#include "trainer/model/depthwise_kernel.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

struct AmpConfig {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;
  bool scaler = false;  // fp16 needs dynamic loss scaling; bf16 does not
};

// The autocast settings of --amp/--amp-dtype on `device` (fp16 on CPU is refused).
Result<AmpConfig> ResolveAmp(const TrainOptions& options, const at::Device& device);
std::string DescribeAmp(const AmpConfig& amp);

// clip_grad_norm_(params, max_norm) without reading the norm on the host: the clip coefficient stays a
// device tensor (PyTorch's own foreach implementation does the same since 2.0). `grads`: reused storage.
void ClipGradNorm(torch::optim::Optimizer& optimizer, double max_norm, std::vector<at::Tensor>* grads);

class TrainStep {
 public:
  // `fused` (null: torch::optim's own step) steps the optimizer with the fused kernels; `reducer` (null for
  // one process) all-reduces the gradients across `world_size` ranks.
  TrainStep(DetectionModel& model, torch::optim::Optimizer& optimizer, ModelEMA& ema, GradScaler& scaler,
            const DetectionLoss& loss, AmpConfig amp, double clip, at::DeviceType device_type,
            FusedStep* fused = nullptr, GradReducer* reducer = nullptr, int world_size = 1);

  // Returns the detached loss items (box, cls, dfl; with a teacher also kd, weighted) on the device. `step_now`: an optimizer step follows
  // this backward, so under DDP its gradients are all-reduced (otherwise they only accumulate locally,
  // DDP's no_sync()); it must be known before backward because the reducer starts inside backward.
  Result<at::Tensor> ForwardBackward(const at::Tensor& images, const at::Tensor& labels, int64_t max_boxes,
                                     bool step_now);

  // Ultralytics optimizer_step: unscale, clip, step (skipped on inf/nan), update scale, zero, EMA.
  Status OptimizerStep();

  // Network slimming (--sparsity): from now on every optimizer step adds s * sign(gamma) to the gradients of
  // `gammas` (the prunable BatchNorm weights, SparsityTargets) after unscaling and clipping, before the
  // step. s 0 or no tensors: off.
  void set_sparsity(double s, std::vector<at::Tensor> gammas) {
    sparsity_ = s;
    sparsity_gammas_ = std::move(gammas);
  }

  // Knowledge distillation (--teacher): from now on every forward also runs `teacher` on the same input
  // under the same autocast, and weight * loss(student, teacher outputs) (scaled by the batch size as the
  // detection loss is) joins the loss; the loss items gain a fourth, kd. Inside a captured step too: the
  // teacher's forward is part of the recorded forward. Null: off.
  void set_distillation(Teacher* teacher, const DistillLoss* loss, double weight) {
    teacher_ = teacher;
    distill_ = loss;
    distill_weight_ = weight;
  }
  // How many loss items ForwardBackward returns: 3, or 4 with a teacher.
  int64_t loss_items() const { return teacher_ != nullptr ? 4 : 3; }

  // Which kernel the forward's depthwise convs take for a batch (trainer/model/depthwise_kernel.h;
  // default: PyTorch's depthwise kernel for every shape).
  void set_depthwise_policy(DepthwisePolicy policy) { depthwise_ = std::move(policy); }
  const DepthwisePolicy& depthwise_policy() const { return depthwise_; }

  // Times the step's parts into `profile` (null: off, the default; the training loop never sets it).
  // A profiled step runs eagerly (a graph has no parts to time).
  void set_profile(StepProfile* profile) { profile_ = profile; }

  // Captures and replays the step as CUDA graphs from here on (graphed_step.h); `notify` receives its
  // one-time messages. Needs the fused optimizer step and one process (CudaGraphsBlocker).
  void UseCudaGraphs(const at::Device& device, GraphedStep::Notify notify);
  const GraphedStep* graphs() const { return graphs_.get(); }

 private:
  DetectionModel& model_;
  torch::optim::Optimizer& optimizer_;
  ModelEMA& ema_;
  GradScaler& scaler_;
  const DetectionLoss& loss_;
  AmpConfig amp_;
  double clip_;
  at::DeviceType device_type_;
  FusedStep* fused_;
  GradReducer* reducer_;
  int world_size_;
  std::vector<at::Tensor> grads_;  // ClipGradNorm's list, reused
  StepProfile* profile_ = nullptr;
  double sparsity_ = 0;
  std::vector<at::Tensor> sparsity_gammas_;
  Teacher* teacher_ = nullptr;
  const DistillLoss* distill_ = nullptr;
  double distill_weight_ = 0;
  std::unique_ptr<GraphedStep> graphs_;
  DepthwisePolicy depthwise_;

  bool Graphed() const { return graphs_ != nullptr && profile_ == nullptr; }
  // The step's two halves, run eagerly or recorded by a graph. `targets` (B, M, 5) padded, or undefined:
  // the loss builds them from `labels`. `group_lrs` null: the optimizer's own lr; `device_ema`: the
  // EMA's on-device update (a captured step).
  Result<at::Tensor> RunForwardBackward(const at::Tensor& images, const at::Tensor& labels, int64_t max_boxes,
                                        const at::Tensor& targets);
  Status RunOptimizerStep(const std::vector<at::Tensor>* group_lrs, bool device_ema);
  void ZeroGrads();
  void StartPart();
  void StopPart(StepPart part);
};

}  // namespace yc::trainer
