// The training step as CUDA graphs (--cuda-graphs): the forward, the loss with its assigner and the
// scaled backward recorded once per batch shape and box-count bucket, the optimizer step (unscale, clip,
// fused step, loss-scale update, zeroed gradients, EMA) once, then replayed with one launch each, so the
// ~2,000 kernel launches of a YOLO step stop costing host time.
//
// What makes a step replayable, and how each piece is kept static:
// - Inputs: each graph owns its image and target buffers; a batch is copied into them, its labels
//   padded to the bucket's width (loss/box_buckets.h: padded rows change nothing).
// - Gradients: created before the first capture and zeroed in place from then on (never set to none),
//   so backward accumulates into the addresses the graphs recorded.
// - Learning rates: one device scalar per parameter group, written in place before each replay (the
//   fused kernels' tensor-lr overloads); momentum, betas and weight decay are recorded values, so a
//   change of any of them (SGD's warm-up) drops the step graph and the step runs eagerly until they
//   settle. The forward graphs serve warm-up too: its accumulation only decides which batches end in a
//   step, and gradients accumulate in place either way.
// - EMA decay: computed on the device from a device update count (ModelEMA::UpdateOnDevice).
// - Lazily: a batch shape runs eagerly the first kEagerSightings times it is seen (cuBLAS/cuDNN set-up,
//   CUDA's lazy loading of kernels, the optimizer state created; none of that may happen under capture),
//   is captured the next time, replayed after. The step graph likewise waits for one eager step.
// A capture that fails turns graphs off for the run (the message says why, once); the step then runs
// eagerly as before. Graphs share one memory pool: they run one at a time, and every tensor that
// outlives a replay (buffers, gradients, loss items) is allocated outside the pool or held by its graph.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"
#include "trainer/engine/ema.h"
#include "trainer/runtime/cuda_graph.h"

namespace yc::trainer {

// --cuda-graphs: auto (on for CUDA where the run allows it), on (the same, and a run that cannot use them
// at all is refused), off.
enum class CudaGraphsMode { kAuto, kOn, kOff };
Result<CudaGraphsMode> ParseCudaGraphsMode(const std::string& text);

// Why a run cannot capture its step at all, or "" when it can: the device, the build, the optimizer
// step (only the fused kernels take a device learning rate), data-parallel training (the gradient
// all-reduce is not captured), and multi_scale (a new batch shape every batch).
std::string CudaGraphsBlocker(const at::Device& device, bool fused_optimizer, bool distributed, bool multi_scale);

// What a run's graphs did, for the run's closing lines: where warm-up time went.
struct GraphedStepStats {
  size_t forward_graphs = 0;     // captured forward/backward graphs
  int64_t step_captures = 0;     // captures of the optimizer step (again after each hyperparameter change)
  double capture_seconds = 0;    // host time spent capturing, all graphs
  int64_t eager_forwards = 0;    // batches run eagerly before their shape's capture
  int64_t replays = 0;           // graph replays, forward and step
};
// "cuda graphs: 9 forward/backward graphs + 1 step graph captured in 1.24 s; 20 batches eager before
// capture, 4,770 replays".
std::string DescribeGraphedStepStats(const GraphedStepStats& s);

class GraphedStep {
 public:
  // Forward + loss on padded targets (B, M, 5) + scaled backward; returns the loss items.
  using ForwardBackwardBody = std::function<Result<at::Tensor>(const at::Tensor& images, const at::Tensor& targets)>;
  // The optimizer step with the given per-group learning-rate tensors and the on-device EMA update.
  using OptimizerBody = std::function<Status(const std::vector<at::Tensor>& group_lrs)>;
  using Notify = std::function<void(const std::string&)>;

  // At most this many forward/backward graphs (batch shapes x buckets); further shapes run eagerly.
  static constexpr size_t kMaxForwardGraphs = 16;
  // Eager runs of a batch shape before it is captured. One would do the set-up; two is what the GPU tests
  // and runs (2026-12-03/04) verified, and costs ~0.1 s a run.
  static constexpr int kEagerSightings = 2;

  GraphedStep(torch::optim::Optimizer& optimizer, ModelEMA& ema, const at::Device& device, ForwardBackwardBody forward,
              OptimizerBody step, Notify notify);

  // The loss items of this batch: from its replayed graph, or from an eager run on the bucket-padded
  // targets (the shape's first kEagerSightings batches); an undefined tensor when the caller is to run
  // it eagerly itself (graphs off, too many shapes). `labels`: the (N, 6) table on the device.
  Result<at::Tensor> ForwardBackward(const at::Tensor& images, const at::Tensor& labels, int64_t max_boxes);

  // Replays the optimizer step; false when it is to run eagerly (call NoteEagerStep() after it).
  Result<bool> OptimizerStep();
  void NoteEagerStep() { ++eager_steps_; }

  bool enabled() const { return enabled_; }
  size_t forward_graphs() const;
  int64_t replays() const { return replays_; }
  GraphedStepStats stats() const;

 private:
  using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;  // B, C, H, W, box bucket
  struct ForwardGraph {
    at::Tensor images, targets, items;
    CudaGraph graph;
    int sightings = 0;  // batches of this shape seen; eager up to kEagerSightings, then captured
  };

  torch::optim::Optimizer& optimizer_;
  ModelEMA& ema_;
  at::Device device_;
  ForwardBackwardBody forward_;
  OptimizerBody step_;
  Notify notify_;
  bool enabled_ = true;
  bool said_full_ = false;
  GraphMemoryPool pool_;
  std::map<ShapeKey, std::unique_ptr<ForwardGraph>> forward_graphs_;
  std::unique_ptr<CudaGraph> step_graph_;
  std::vector<double> step_hyper_;  // the recorded momentum/betas/decay/eps of every group
  std::vector<at::Tensor> group_lrs_;
  int64_t eager_steps_ = 0;
  int64_t replays_ = 0;
  int64_t eager_forwards_ = 0;
  int64_t step_captures_ = 0;
  double capture_seconds_ = 0;

  void Disable(const std::string& why);
  void EnsureGradients();
  std::vector<double> StepHyperparameters() const;
  void WriteLearningRates();
  Status CaptureForward(ForwardGraph* g);
  Status CaptureStep();
};

}  // namespace yc::trainer
