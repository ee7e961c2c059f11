// NAdam, RAdam and Adamax, the Adam-family optimizers Ultralytics' build_optimizer takes from torch.optim
// and LibTorch's C++ torch::optim does not have: one torch::optim::Optimizer for the three, with
// torch.optim's update rules, defaults and state names (torch/optim/nadam.py, radam.py, adamax.py of
// PyTorch 2.x, whose single-tensor step these follow; their weight decay is L2, added to the gradient, as
// decoupled_weight_decay=False, the default, does). The state is what the Python optimizer keeps per
// parameter (step; exp_avg; exp_avg_sq for NAdam and RAdam; mu_product, a float32 scalar, for NAdam;
// exp_inf for Adamax), so checkpoints carry it under the same names (trainer/io/optimizer_state.h).
//
//   AdamVariant opt(groups, AdamVariantOptions(AdamVariantKind::kNAdam, 0.01).betas({0.937, 0.999}));
//   opt.step();   // after backward, like any torch::optim optimizer
//
// PyTorch 1.13's single-tensor NAdam (its default on the CPU) computed mu_product_next with mu counted
// twice; 2.0 fixed that, and 1.13's foreach NAdam already had the fixed rule, which is what this follows.
#pragma once

#include <memory>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "trainer/io/optimizer_state.h"

namespace yc::trainer {

enum class AdamVariantKind { kNAdam, kRAdam, kAdamax };

struct AdamVariantOptions : public torch::optim::OptimizerCloneableOptions<AdamVariantOptions>, public DescribedOptions {
  using betas_t = std::tuple<double, double>;
  // torch.optim's defaults for `kind`: lr 2e-3 (NAdam, Adamax) or 1e-3 (RAdam), betas (0.9, 0.999), eps 1e-8,
  // weight_decay 0, NAdam's momentum_decay 4e-3.
  explicit AdamVariantOptions(AdamVariantKind kind);
  AdamVariantOptions(AdamVariantKind kind, double lr);
  TORCH_ARG(AdamVariantKind, kind) = AdamVariantKind::kNAdam;
  TORCH_ARG(double, lr) = 2e-3;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, momentum_decay) = 4e-3;  // NAdam only

 public:
  double get_lr() const override { return lr_; }
  void set_lr(const double lr) override { lr_ = lr; }

  const char* kind_name() const override;
  std::map<std::string, double> SavedOptions() const override;
  Status RestoreOptions(const std::map<std::string, double>& saved, const std::string& where) override;
  Result<std::unique_ptr<torch::optim::OptimizerParamState>> MakeState(const SavedParamState& saved,
                                                                      const at::Tensor& param,
                                                                      const std::string& where) const override;
};

struct AdamVariantParamState : public torch::optim::OptimizerCloneableParamState<AdamVariantParamState>,
                               public DescribedParamState {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(at::Tensor, exp_avg);
  TORCH_ARG(at::Tensor, exp_avg_sq);  // NAdam, RAdam
  TORCH_ARG(at::Tensor, exp_inf);     // Adamax
  TORCH_ARG(at::Tensor, mu_product);  // NAdam: 0-dim float32 on the CPU, as torch.optim keeps it

 public:
  void SaveTo(SavedParamState* out) const override;
};

class AdamVariant : public torch::optim::Optimizer {
 public:
  AdamVariant(std::vector<torch::optim::OptimizerParamGroup> param_groups, AdamVariantOptions defaults);

  // One step of every group's kind; parameters without a gradient are left alone.
  at::Tensor step(LossClosure closure = nullptr) override;

  AdamVariantKind kind() const { return kind_; }

 private:
  AdamVariantKind kind_;
};

}  // namespace yc::trainer
