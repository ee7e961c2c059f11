// The training stack: the device and its autocast settings, the model, and what one training step needs
// (optimizer, fused step, EMA, grad scaler, loss, TrainStep). Built here, in one place, for the training
// loop (trainer/engine/run_setup.cc) and the ceiling probe (trainer/engine/ceiling_probe.cc), so the
// probe measures the step training takes.
//
// In steps, because a run does its own work between them: PrepareDevice (after the distributed context
// picks the rank's device), NewModel (the run then loads or transfers weights, freezes layers and hooks
// the gradient reducer), BuildStackOptimizer (the run logs its groups), BuildStep (the rest, restored
// from a checkpoint when resuming).
#pragma once

#include <cstdint>
#include <map>
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
#include "trainer/engine/optimizer.h"
#include "trainer/engine/train_step.h"
#include "trainer/io/checkpoint.h"
#include "trainer/loss/loss.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {

// The device configured for training (cuDNN/TF32 settings), with --amp's and --channels-last's meaning on it.
struct TrainDevice {
  at::Device device{at::kCPU};
  AmpConfig amp;
  bool channels_last = false;  // CUDA only
  std::string tuning;          // ConfigureDevice's account of the settings
};
Result<TrainDevice> PrepareDevice(const TrainOptions& options, const at::Device& device);

// The (N, C, H, W) of every full train batch of one rank, or empty where batches change shape (rect,
// multi_scale): the shape the depthwise policy gives cuDNN (trainer/model/depthwise_kernel.h).
std::vector<int64_t> SteadyTrainInput(const TrainOptions& options, int world_size);

// A freshly initialised model (from the default generator: seed it first) on `target`'s device and
// memory format.
// `channels`: a pruned architecture (ModelOptions::channels; empty: the scale's widths).
DetectionModel NewModel(const ModelName& name, int64_t nc, const TrainDevice& target,
                        const std::map<std::string, int64_t>& channels = {});

// A resumed run's saved optimizer, gradients, EMA and scaler state (reader null: a fresh start).
struct StackRestore {
  const CheckpointReader* reader = nullptr;
  const TrainState* state = nullptr;
};

// How the step reaches the other ranks (defaults: one process).
struct StepSync {
  GradReducer* reducer = nullptr;
  int world_size = 1;
};

struct TrainingStack {
  TrainDevice target;
  DetectionModel model{nullptr};
  int64_t accumulate = 1;  // batches per optimizer step
  double weight_decay = 0; // scaled to the accumulated batch
  OptimizerSpec spec;      // resolved ("auto" picked)
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<FusedStep> fused;  // null: torch::optim's own step
  std::unique_ptr<ModelEMA> ema;
  std::unique_ptr<GradScaler> scaler;
  std::unique_ptr<DetectionLoss> loss;
  // --teacher: the frozen teacher and the distillation loss (null without), which the step points at.
  std::unique_ptr<Teacher> teacher;
  std::unique_ptr<DistillLoss> distill;
  std::unique_ptr<TrainStep> step;  // holds references to the members above: the stack is not moved
};

// Ultralytics' build_optimizer over stack->model for `iterations` optimizer iterations (what "auto"
// decides on): accumulate, weight_decay, spec and optimizer.
Status BuildStackOptimizer(TrainingStack* stack, const TrainOptions& options, int64_t nc, int64_t iterations);

// The optimizer's restored state, then the EMA, scaler, loss and step around stack->model. The fused
// step is built after the optimizer state is restored (it reads that state).
Status BuildStep(TrainingStack* stack, const TrainOptions& options, int64_t nc, const StackRestore& restore = {},
                 const StepSync& sync = {});

// "optimizer: SGD(lr=0.01, momentum=0.9) with parameter groups ..." as Ultralytics logs it.
// --cuda-graphs on the built step (graphed_step.h): off, on where nothing blocks it (`say` gets the
// reason where something does, on CUDA), or an InvalidArgument for "on" when something does.
Status EnableCudaGraphs(TrainingStack* stack, const TrainOptions& options, bool distributed,
                        const GraphedStep::Notify& say);

std::string DescribeOptimizer(const TrainingStack& stack);

}  // namespace yc::trainer
