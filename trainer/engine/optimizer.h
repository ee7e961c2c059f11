// Ultralytics' optimizer set-up (engine/trainer.py build_optimizer): three parameter groups — 0: biases
// (no decay), 1: other weights (decay), 2: normalisation-layer weights (no decay) — SGD with Nesterov
// momentum, RMSprop with momentum, or an Adam-family optimizer (Adam, AdamW, NAdam, RAdam, Adamax) with
// betas (momentum, 0.999) and weight decay per group only, and the "auto" rule (SGD lr 0.01 momentum 0.9
// for runs over 10k iterations, else AdamW with lr fitted to the class count; warmup bias lr 0).
// NAdam, RAdam and Adamax, which torch::optim lacks, are trainer/engine/adam_variants.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "base/status.h"
#include "trainer/config/optimizer_name.h"

namespace yc::trainer {

// The optimizer actually used, after the "auto" rule.
struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSGD;
  double lr = 0.01;
  double momentum = 0.937;        // SGD / RMSProp momentum, Adam beta1
  double warmup_bias_lr = 0.1;    // forced to 0 by "auto"
};

// name: auto | SGD | Adam | AdamW | RMSProp | NAdam | RAdam | Adamax (any case: ParseOptimizerName). iterations: see OptimizerIterations.
Result<OptimizerSpec> ResolveOptimizer(const std::string& name, double lr0, double momentum, double warmup_bias_lr,
                                       int64_t nc, int64_t iterations);

// Ultralytics' iteration estimate for the auto rule: ceil(images / max(batch, nbs)) * epochs.
int64_t OptimizerIterations(int64_t num_images, int64_t batch, int64_t nbs, int64_t epochs);
// Gradient accumulation steps: max(round(nbs / batch), 1).
int64_t AccumulateSteps(int64_t nbs, int64_t batch);
// weight_decay * batch * accumulate / nbs.
double ScaledWeightDecay(double weight_decay, int64_t batch, int64_t accumulate, int64_t nbs);

struct ParamGroups {
  std::vector<at::Tensor> biases;        // names containing "bias"
  std::vector<at::Tensor> decay;         // weights of every other layer
  std::vector<at::Tensor> norm_weights;  // weights of *Norm* layers
};
// Trainable parameters only (the frozen DFL weights are left out; Ultralytics lists them but they never
// receive a gradient, so nothing changes).
ParamGroups SplitParameters(const torch::nn::Module& module);

// Groups in Ultralytics order: 0 biases (decay 0), 1 weights (weight_decay), 2 norm weights (decay 0).
std::unique_ptr<torch::optim::Optimizer> BuildOptimizer(const torch::nn::Module& module, const OptimizerSpec& spec,
                                                        double weight_decay);

void SetLearningRate(torch::optim::Optimizer& optimizer, size_t group, double lr);
double GetLearningRate(const torch::optim::Optimizer& optimizer, size_t group);
// Sets SGD/RMSProp momentum. Adam-family groups have no "momentum" entry, so Ultralytics' warmup leaves
// their beta1 alone; this returns false and changes nothing for them too.
bool SetMomentum(torch::optim::Optimizer& optimizer, size_t group, double momentum);

}  // namespace yc::trainer
