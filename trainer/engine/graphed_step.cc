#include "trainer/engine/graphed_step.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "trainer/loss/box_buckets.h"
#include "trainer/loss/loss.h"

namespace yc::trainer {

namespace optim = torch::optim;

Result<CudaGraphsMode> ParseCudaGraphsMode(const std::string& text) {
  if (text == "auto") return CudaGraphsMode::kAuto;
  if (text == "on") return CudaGraphsMode::kOn;
  if (text == "off") return CudaGraphsMode::kOff;
  return Status::InvalidArgument("--cuda-graphs: expected auto, on or off, got '" + text + "'");
}

std::string CudaGraphsBlocker(const at::Device& device, bool fused_optimizer, bool distributed, bool multi_scale) {
  if (!device.is_cuda()) return "not a CUDA device";
  if (!CudaGraphsBuilt()) return "this build's LibTorch has no CUDA";
  if (!fused_optimizer) {
    return "the optimizer step is not the fused one (NAdam, RAdam, Adamax, RMSProp, --no-fused-optimizer or "
           "LibTorch < 2.4): only the fused kernels read the learning rate from the device";
  }
  if (distributed) return "data-parallel training: the gradient all-reduce is not captured";
  if (multi_scale) return "multi_scale: every batch has a new shape";
  return "";
}

GraphedStep::GraphedStep(optim::Optimizer& optimizer, ModelEMA& ema, const at::Device& device,
                         ForwardBackwardBody forward, OptimizerBody step, Notify notify)
    : optimizer_(optimizer),
      ema_(ema),
      device_(device),
      forward_(std::move(forward)),
      step_(std::move(step)),
      notify_(std::move(notify)) {}

size_t GraphedStep::forward_graphs() const {
  size_t n = 0;
  for (const auto& [key, g] : forward_graphs_) n += g->graph.captured() ? 1 : 0;
  return n;
}

GraphedStepStats GraphedStep::stats() const {
  return {forward_graphs(), step_captures_, capture_seconds_, eager_forwards_, replays_};
}

std::string DescribeGraphedStepStats(const GraphedStepStats& s) {
  char line[256];
  std::snprintf(line, sizeof line,
                "cuda graphs: %zu forward/backward graph%s + %lld step graph capture%s in %.2f s; %lld batches eager "
                "before their capture, %lld replays",
                s.forward_graphs, s.forward_graphs == 1 ? "" : "s", static_cast<long long>(s.step_captures),
                s.step_captures == 1 ? "" : "s", s.capture_seconds, static_cast<long long>(s.eager_forwards),
                static_cast<long long>(s.replays));
  return line;
}

namespace {

// Runs `capture` and adds its host time to `*seconds`.
template <typename F>
Status Timed(double* seconds, F&& capture) {
  const auto t0 = std::chrono::steady_clock::now();
  Status st = capture();
  *seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace

void GraphedStep::Disable(const std::string& why) {
  enabled_ = false;
  forward_graphs_.clear();
  step_graph_.reset();
  if (notify_) notify_("cuda graphs: off from here, the step runs eagerly (" + why + ")");
}

Result<at::Tensor> GraphedStep::ForwardBackward(const at::Tensor& images, const at::Tensor& labels,
                                                int64_t max_boxes) {
  if (!enabled_) return at::Tensor();
  const int64_t bucket = BoxCountBucket(max_boxes);
  const ShapeKey key{images.size(0), images.size(1), images.size(2), images.size(3), bucket};
  auto it = forward_graphs_.find(key);
  if (it == forward_graphs_.end()) {
    if (forward_graphs_.size() >= kMaxForwardGraphs) {
      if (!said_full_ && notify_) {
        notify_("cuda graphs: " + std::to_string(kMaxForwardGraphs) +
                " batch shapes captured; batches of further shapes run eagerly");
      }
      said_full_ = true;
      return at::Tensor();
    }
    it = forward_graphs_.emplace(key, std::make_unique<ForwardGraph>()).first;
  }
  ForwardGraph* g = it->second.get();
  const at::Tensor targets = PreprocessTargets(labels, images.size(0), bucket, static_cast<double>(images.size(2)),
                                               static_cast<double>(images.size(3)));
  if (g->sightings < kEagerSightings) {  // eager, on the targets padded as the graph will have them
    ++g->sightings;
    ++eager_forwards_;
    return forward_(images, targets);
  }
  if (!g->graph.captured()) {
    g->images = at::empty_like(images);
    g->targets = at::empty_like(targets);
  }
  g->images.copy_(images);
  g->targets.copy_(targets);
  if (!g->graph.captured()) {
    const Status captured = Timed(&capture_seconds_, [&] { return CaptureForward(g); });
    if (!captured.ok()) {
      Disable("capturing the forward and backward failed: " + captured.message());
      return at::Tensor();
    }
  }
  g->graph.Replay();
  ++replays_;
  return g->items;
}

Status GraphedStep::CaptureForward(ForwardGraph* g) {
  EnsureGradients();
  return g->graph.Capture(device_.has_index() ? device_.index() : -1, pool_, [this, g]() -> Status {
    YC_ASSIGN_OR_RETURN(g->items, forward_(g->images, g->targets));
    return Status::OK();
  });
}

Result<bool> GraphedStep::OptimizerStep() {
  if (!enabled_ || eager_steps_ == 0) return false;  // the optimizer's state is created by an eager step
  std::vector<double> hyper = StepHyperparameters();
  if (hyper != step_hyper_) {  // first call, or warm-up moved momentum: eager until it holds still
    step_hyper_ = std::move(hyper);
    step_graph_.reset();
    return false;
  }
  WriteLearningRates();
  ema_.LoadDeviceCount();
  if (!step_graph_) {
    const Status captured = Timed(&capture_seconds_, [&] { return CaptureStep(); });
    ++step_captures_;
    if (!captured.ok()) {
      Disable("capturing the optimizer step failed: " + captured.message());
      return false;
    }
  }
  step_graph_->Replay();
  ema_.CountDeviceUpdate();
  ++replays_;
  return true;
}

Status GraphedStep::CaptureStep() {
  EnsureGradients();
  auto graph = std::make_unique<CudaGraph>();
  YC_RETURN_IF_ERROR(graph->Capture(device_.has_index() ? device_.index() : -1, pool_,
                                    [this]() { return step_(group_lrs_); }));
  step_graph_ = std::move(graph);
  return Status::OK();
}

// Backward accumulates into existing gradients in place; a graph records their addresses, so every
// trainable parameter has one before the first capture (zeros: what an unused parameter would add).
void GraphedStep::EnsureGradients() {
  c10::NoGradGuard no_grad;
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      if (p.requires_grad() && !p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    }
  }
}

std::vector<double> GraphedStep::StepHyperparameters() const {
  std::vector<double> h;
  for (const auto& group : optimizer_.param_groups()) {
    const auto& o = group.options();
    if (const auto* s = dynamic_cast<const optim::SGDOptions*>(&o)) {
      h.insert(h.end(), {s->momentum(), s->weight_decay(), s->dampening(), s->nesterov() ? 1.0 : 0.0});
    } else if (const auto* w = dynamic_cast<const optim::AdamWOptions*>(&o)) {
      h.insert(h.end(), {std::get<0>(w->betas()), std::get<1>(w->betas()), w->weight_decay(), w->eps()});
    } else if (const auto* a = dynamic_cast<const optim::AdamOptions*>(&o)) {
      h.insert(h.end(), {std::get<0>(a->betas()), std::get<1>(a->betas()), a->weight_decay(), a->eps()});
    }
  }
  return h;
}

void GraphedStep::WriteLearningRates() {
  const auto& groups = optimizer_.param_groups();
  if (group_lrs_.size() != groups.size()) {
    group_lrs_.clear();
    for (size_t k = 0; k < groups.size(); ++k) {
      group_lrs_.push_back(at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device_)));
    }
  }
  for (size_t k = 0; k < groups.size(); ++k) group_lrs_[k].fill_(groups[k].options().get_lr());
}

}  // namespace yc::trainer
