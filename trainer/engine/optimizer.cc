#include "trainer/engine/optimizer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "trainer/engine/adam_variants.h"

namespace yc::trainer {

namespace optim = torch::optim;

Result<OptimizerSpec> ResolveOptimizer(const std::string& name, double lr0, double momentum, double warmup_bias_lr,
                                       int64_t nc, int64_t iterations) {
  YC_ASSIGN_OR_RETURN(const std::optional<OptimizerKind> kind, ParseOptimizerName(name));
  OptimizerSpec spec;
  spec.lr = lr0;
  spec.momentum = momentum;
  spec.warmup_bias_lr = warmup_bias_lr;
  if (!kind) {
    // lr0 fit equation, rounded to 6 decimals like Python's round(x, 6).
    const double lr_fit = std::nearbyint(0.002 * 5.0 / (4.0 + static_cast<double>(nc)) * 1e6) / 1e6;
    if (iterations > 10000) {
      spec.kind = OptimizerKind::kSGD;
      spec.lr = 0.01;
    } else {
      spec.kind = OptimizerKind::kAdamW;
      spec.lr = lr_fit;
    }
    spec.momentum = 0.9;
    spec.warmup_bias_lr = 0.0;  // no higher than 0.01 for Adam
    return spec;
  }
  spec.kind = *kind;
  if (!(lr0 > 0)) return Status::InvalidArgument("optimizer: lr0 must be > 0");
  if (spec.kind == OptimizerKind::kSGD && !(momentum > 0)) {
    return Status::InvalidArgument("optimizer: SGD uses Nesterov momentum, which needs momentum > 0");
  }
  return spec;
}

int64_t OptimizerIterations(int64_t num_images, int64_t batch, int64_t nbs, int64_t epochs) {
  const int64_t denom = std::max<int64_t>({batch, nbs, 1});
  return (num_images + denom - 1) / denom * epochs;
}

int64_t AccumulateSteps(int64_t nbs, int64_t batch) {
  if (batch <= 0) return 1;
  return std::max<int64_t>(static_cast<int64_t>(std::nearbyint(static_cast<double>(nbs) / static_cast<double>(batch))), 1);
}

double ScaledWeightDecay(double weight_decay, int64_t batch, int64_t accumulate, int64_t nbs) {
  return weight_decay * static_cast<double>(batch) * static_cast<double>(accumulate) / static_cast<double>(nbs);
}

ParamGroups SplitParameters(const torch::nn::Module& module) {
  ParamGroups g;
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    const bool is_norm = item.value()->name().find("Norm") != std::string::npos;
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      if (!p.value().requires_grad()) continue;
      const std::string full = item.key().empty() ? p.key() : item.key() + "." + p.key();
      if (full.find("bias") != std::string::npos) {
        g.biases.push_back(p.value());
      } else if (is_norm) {
        g.norm_weights.push_back(p.value());
      } else {
        g.decay.push_back(p.value());
      }
    }
  }
  return g;
}

namespace {

// NAdam, RAdam or Adamax (spec.kind is one of them).
std::unique_ptr<AdamVariantOptions> Variant(const OptimizerSpec& spec, double weight_decay) {
  const AdamVariantKind kind = spec.kind == OptimizerKind::kNAdam   ? AdamVariantKind::kNAdam
                               : spec.kind == OptimizerKind::kRAdam ? AdamVariantKind::kRAdam
                                                                    : AdamVariantKind::kAdamax;
  auto o = std::make_unique<AdamVariantOptions>(kind, spec.lr);
  o->betas(std::make_tuple(spec.momentum, 0.999)).weight_decay(weight_decay);
  return o;
}

std::unique_ptr<optim::OptimizerOptions> OptionsFor(const OptimizerSpec& spec, double weight_decay) {
  switch (spec.kind) {
    case OptimizerKind::kSGD:
      return std::make_unique<optim::SGDOptions>(
          optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(true).weight_decay(weight_decay));
    case OptimizerKind::kAdam:
      return std::make_unique<optim::AdamOptions>(
          optim::AdamOptions(spec.lr).betas(std::make_tuple(spec.momentum, 0.999)).weight_decay(weight_decay));
    case OptimizerKind::kAdamW:
      return std::make_unique<optim::AdamWOptions>(
          optim::AdamWOptions(spec.lr).betas(std::make_tuple(spec.momentum, 0.999)).weight_decay(weight_decay));
    case OptimizerKind::kRMSProp:
      return std::make_unique<optim::RMSpropOptions>(
          optim::RMSpropOptions(spec.lr).momentum(spec.momentum).weight_decay(weight_decay));
    case OptimizerKind::kNAdam:
    case OptimizerKind::kRAdam:
    case OptimizerKind::kAdamax:
      return Variant(spec, weight_decay);
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<optim::Optimizer> BuildOptimizer(const torch::nn::Module& module, const OptimizerSpec& spec,
                                                 double weight_decay) {
  ParamGroups g = SplitParameters(module);
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(g.biases, OptionsFor(spec, 0.0));
  groups.emplace_back(g.decay, OptionsFor(spec, weight_decay));
  groups.emplace_back(g.norm_weights, OptionsFor(spec, 0.0));
  switch (spec.kind) {
    case OptimizerKind::kSGD:
      return std::make_unique<optim::SGD>(
          groups, optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(true));
    case OptimizerKind::kAdam:
      return std::make_unique<optim::Adam>(groups,
                                           optim::AdamOptions(spec.lr).betas(std::make_tuple(spec.momentum, 0.999)));
    case OptimizerKind::kAdamW:
      return std::make_unique<optim::AdamW>(
          groups, optim::AdamWOptions(spec.lr).betas(std::make_tuple(spec.momentum, 0.999)).weight_decay(0.0));
    case OptimizerKind::kRMSProp:
      return std::make_unique<optim::RMSprop>(groups, optim::RMSpropOptions(spec.lr).momentum(spec.momentum));
    // Ultralytics: getattr(optim, name)(g, lr=lr, betas=(momentum, 0.999), weight_decay=0.0).
    case OptimizerKind::kNAdam:
    case OptimizerKind::kRAdam:
    case OptimizerKind::kAdamax:
      return std::make_unique<AdamVariant>(groups, *Variant(spec, 0.0));
  }
  return nullptr;
}

void SetLearningRate(optim::Optimizer& optimizer, size_t group, double lr) {
  auto& groups = optimizer.param_groups();
  if (group < groups.size()) groups[group].options().set_lr(lr);
}

double GetLearningRate(const optim::Optimizer& optimizer, size_t group) {
  const auto& groups = optimizer.param_groups();
  return group < groups.size() ? groups[group].options().get_lr() : 0.0;
}

bool SetMomentum(optim::Optimizer& optimizer, size_t group, double momentum) {
  auto& groups = optimizer.param_groups();
  if (group >= groups.size()) return false;
  auto& opts = groups[group].options();
  if (auto* sgd = dynamic_cast<optim::SGDOptions*>(&opts)) {
    sgd->momentum(momentum);
    return true;
  }
  if (auto* rms = dynamic_cast<optim::RMSpropOptions*>(&opts)) {
    rms->momentum(momentum);
    return true;
  }
  return false;
}

}  // namespace yc::trainer
