#include "trainer/engine/train_step.h"

#include <optional>

#include <torch/version.h>

#include "trainer/model/prune/sparsity.h"
#include "trainer/runtime/autocast.h"

// _foreach_mul_ with a tensor scale (one launch for all gradients) exists from PyTorch 2.1.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define YC_FOREACH_MUL_TENSOR 1
#else
#define YC_FOREACH_MUL_TENSOR 0
#endif

namespace yc::trainer {

Result<AmpConfig> ResolveAmp(const TrainOptions& o, const at::Device& device) {
  AmpConfig a;
  // On the CPU, amp means fp32 unless a dtype is asked for, as Ultralytics' check_amp turns AMP off there;
  // bf16 autocast only with --amp-dtype bf16 (fp16, which needs CUDA, is refused below).
  const bool cpu_dtype_asked = !device.is_cuda() && o.amp_dtype != AmpDtype::kAuto;
  a.enabled = o.amp != AmpMode::kOff && (device.is_cuda() || cpu_dtype_asked);
  if (!a.enabled) return a;
  if (o.amp_dtype == AmpDtype::kBFloat16 || (o.amp_dtype == AmpDtype::kAuto && !device.is_cuda())) {
    a.dtype = at::kBFloat16;
  } else {
    a.dtype = at::kHalf;
  }
  if (a.dtype == at::kHalf && !device.is_cuda()) {
    return Status::InvalidArgument("--amp-dtype fp16 needs a CUDA device; on the CPU autocast runs in bf16");
  }
  a.scaler = a.dtype == at::kHalf;
  return a;
}

std::string DescribeAmp(const AmpConfig& a) {
  if (!a.enabled) return "off (fp32)";
  return a.scaler ? "fp16 autocast + dynamic loss scaling" : "bf16 autocast (no loss scaling)";
}

void ClipGradNorm(torch::optim::Optimizer& optimizer, double max_norm, std::vector<at::Tensor>* grads) {
  grads->clear();
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) grads->push_back(p.grad());
    }
  }
  if (grads->empty()) return;
  std::vector<at::Tensor> norms = at::_foreach_norm(*grads, 2);
  auto total = at::stack(norms).norm();
  auto coef = total.add(1e-6).reciprocal().mul(max_norm).clamp_max(1.0);
#if YC_FOREACH_MUL_TENSOR
  at::_foreach_mul_(*grads, coef);
#else
  for (auto& g : *grads) g.mul_(coef);
#endif
}

TrainStep::TrainStep(DetectionModel& model, torch::optim::Optimizer& optimizer, ModelEMA& ema, GradScaler& scaler,
                     const DetectionLoss& loss, AmpConfig amp, double clip, at::DeviceType device_type,
                     FusedStep* fused, GradReducer* reducer, int world_size)
    : model_(model), optimizer_(optimizer), ema_(ema), scaler_(scaler), loss_(loss), amp_(amp), clip_(clip),
      device_type_(device_type), fused_(fused), reducer_(reducer), world_size_(world_size) {}

Result<at::Tensor> TrainStep::ForwardBackward(const at::Tensor& images, const at::Tensor& labels,
                                              int64_t max_boxes, bool step_now) {
  if (reducer_ != nullptr) reducer_->set_require_sync(step_now);
  if (Graphed()) {
    YC_ASSIGN_OR_RETURN(at::Tensor items, graphs_->ForwardBackward(images, labels, max_boxes));
    if (items.defined()) return items;
  }
  return RunForwardBackward(images, labels, max_boxes, at::Tensor());
}

Result<at::Tensor> TrainStep::RunForwardBackward(const at::Tensor& images, const at::Tensor& labels,
                                                 int64_t max_boxes, const at::Tensor& targets) {
  DetectOutput out;
  std::vector<at::Tensor> teacher_feats;
  StartPart();
  {
    AutocastGuard autocast(device_type_, amp_.enabled, amp_.dtype);
    DepthwiseKernelScope depthwise(depthwise_.For(images));
    out = model_->forward(images);
    // The same input tensor and autocast region: the two heads see the very same pixels and precision.
    if (teacher_ != nullptr) teacher_feats = teacher_->Forward(images);
  }
  StopPart(StepPart::kForward);
  StartPart();
  // Profiled, the assigner's time is its own part, cut out of the loss's.
  std::optional<AssignerMarks> marks;
  if (profile_ != nullptr) {
    marks = AssignerMarks{[this] {
                            StopPart(StepPart::kLoss);
                            StartPart();
                          },
                          [this] {
                            StopPart(StepPart::kAssigner);
                            StartPart();
                          }};
  }
  const AssignerMarks* mark = marks ? &*marks : nullptr;
  YC_ASSIGN_OR_RETURN(LossOutput loss, targets.defined() ? loss_.FromTargets(out.feats, targets, mark)
                                                         : loss_(out.feats, labels, max_boxes, mark));
  if (teacher_ != nullptr) {
    YC_ASSIGN_OR_RETURN(at::Tensor kd, (*distill_)(out.feats, teacher_feats));
    kd = kd * distill_weight_;
    // Scaled by the batch size as LossOutput::total is, so the weight compares with the detection gains.
    loss.total = loss.total + kd * static_cast<double>(images.size(0));
    loss.items = at::cat({loss.items, kd.detach().reshape({1})});
  }
  StopPart(StepPart::kLoss);
  // Ultralytics multiplies the loss by world_size under DDP: the reducer averages like DDP, so the result
  // is the gradient of the summed global-batch loss.
  StartPart();
  at::Tensor total = world_size_ > 1 ? loss.total * static_cast<double>(world_size_) : loss.total;
  scaler_.Scale(total).backward();
  StopPart(StepPart::kBackward);
  if (profile_ != nullptr) profile_->CountBatch();
  return loss.items;
}

Status TrainStep::OptimizerStep() {
  if (Graphed()) {
    YC_ASSIGN_OR_RETURN(bool replayed, graphs_->OptimizerStep());
    if (replayed) return Status::OK();
  }
  YC_RETURN_IF_ERROR(RunOptimizerStep(nullptr, /*device_ema=*/false));
  if (graphs_ != nullptr) graphs_->NoteEagerStep();
  return Status::OK();
}

Status TrainStep::RunOptimizerStep(const std::vector<at::Tensor>* group_lrs, bool device_ema) {
  StartPart();
  // First: after Finish() every rank holds the same gradients, so found_inf, the clip norm and the
  // step agree without further collectives.
  if (reducer_ != nullptr) YC_RETURN_IF_ERROR(reducer_->Finish());
  YC_RETURN_IF_ERROR(scaler_.Unscale(optimizer_));
  ClipGradNorm(optimizer_, clip_, &grads_);
  // After clipping: the L1 term is a regulariser of its own, not part of the loss gradient's norm.
  AddSparsityGradient(sparsity_gammas_, sparsity_);
  if (fused_ != nullptr) {
    // Skips an overflowed step on the device: no host read of found_inf, no pipeline drain.
    fused_->Step(scaler_.found_inf(), group_lrs);
  } else {
    YC_RETURN_IF_ERROR(scaler_.Step(optimizer_).status());
  }
  scaler_.Update();
  ZeroGrads();
  Status ema = device_ema ? ema_.UpdateOnDevice(*model_) : ema_.Update(*model_);
  StopPart(StepPart::kOptimizer);
  return ema;
}

// With graphs the gradients keep their tensors (zeroed in place: the graphs recorded their addresses);
// without, they are released as PyTorch's zero_grad() does since 2.0.
void TrainStep::ZeroGrads() {
  if (graphs_ == nullptr) {
    optimizer_.zero_grad();
    return;
  }
  grads_.clear();
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) grads_.push_back(p.grad());
    }
  }
  if (!grads_.empty()) at::_foreach_zero_(grads_);
}

void TrainStep::UseCudaGraphs(const at::Device& device, GraphedStep::Notify notify) {
  graphs_ = std::make_unique<GraphedStep>(
      optimizer_, ema_, device,
      [this](const at::Tensor& images, const at::Tensor& targets) {
        return RunForwardBackward(images, at::Tensor(), 0, targets);
      },
      [this](const std::vector<at::Tensor>& group_lrs) { return RunOptimizerStep(&group_lrs, /*device_ema=*/true); },
      std::move(notify));
}

void TrainStep::StartPart() {
  if (profile_ != nullptr) profile_->Start();
}

void TrainStep::StopPart(StepPart part) {
  if (profile_ != nullptr) profile_->Stop(part);
}

}  // namespace yc::trainer
