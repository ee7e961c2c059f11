#include "trainer/engine/adam_variants.h"

#include <cmath>

#include <c10/core/GradMode.h>

namespace yc::trainer {

namespace optim = torch::optim;

namespace {

double DefaultLr(AdamVariantKind kind) { return kind == AdamVariantKind::kRAdam ? 1e-3 : 2e-3; }

// The per-parameter arithmetic of each kind (torch/optim/*.py, _single_tensor_*): `grad` already holds
// the L2 term, `step` counts this step.
void NAdamUpdate(const AdamVariantOptions& o, AdamVariantParamState& s, at::Tensor& param, const at::Tensor& grad,
                 double step) {
  const auto [beta1, beta2] = o.betas();
  const double bias_correction2 = 1 - std::pow(beta2, step);
  // The momentum cache mu_t and mu_{t+1}.
  const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * o.momentum_decay()));
  const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay()));
  s.mu_product().mul_(mu);  // in float32, as torch.optim's tensor
  const double mu_product = s.mu_product().item<double>();
  const double mu_product_next = mu_product * mu_next;
  s.exp_avg().lerp_(grad, 1 - beta1);
  s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  at::Tensor denom = s.exp_avg_sq().div(bias_correction2).sqrt_().add_(o.eps());
  param.addcdiv_(grad, denom, -o.lr() * (1. - mu) / (1. - mu_product));
  param.addcdiv_(s.exp_avg(), denom, -o.lr() * mu_next / (1. - mu_product_next));
}

void RAdamUpdate(const AdamVariantOptions& o, AdamVariantParamState& s, at::Tensor& param, const at::Tensor& grad,
                 double step) {
  const auto [beta1, beta2] = o.betas();
  s.exp_avg().lerp_(grad, 1 - beta1);
  s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  const at::Tensor bias_corrected_exp_avg = s.exp_avg() / bias_correction1;
  // The maximum and the current length of the approximated simple moving average.
  const double rho_inf = 2 / (1 - beta2) - 1;
  const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
  if (rho_t > 5.0) {  // the variance is tractable: rectified adaptive step
    const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    const at::Tensor adaptive_lr = std::sqrt(bias_correction2) / s.exp_avg_sq().sqrt().add_(o.eps());
    param.add_(bias_corrected_exp_avg * o.lr() * adaptive_lr * rect, -1.0);
  } else {
    param.add_(bias_corrected_exp_avg * o.lr(), -1.0);
  }
}

void AdamaxUpdate(const AdamVariantOptions& o, AdamVariantParamState& s, at::Tensor& param, const at::Tensor& grad,
                  double step) {
  const auto [beta1, beta2] = o.betas();
  s.exp_avg().lerp_(grad, 1 - beta1);
  // The exponentially weighted infinity norm.
  at::maximum_out(s.exp_inf(), s.exp_inf().mul_(beta2), grad.abs().add_(o.eps()));
  const double clr = o.lr() / (1 - std::pow(beta1, step));
  param.addcdiv_(s.exp_avg(), s.exp_inf(), -clr);
}

// A parameter's state on its first step, as torch.optim creates it.
std::unique_ptr<AdamVariantParamState> FreshState(AdamVariantKind kind, const at::Tensor& p) {
  auto s = std::make_unique<AdamVariantParamState>();
  s->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
  if (kind == AdamVariantKind::kAdamax) {
    s->exp_inf(at::zeros_like(p, at::MemoryFormat::Preserve));
  } else {
    s->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
  }
  if (kind == AdamVariantKind::kNAdam) s->mu_product(at::ones({}, at::TensorOptions().dtype(at::kFloat)));
  return s;
}

}  // namespace

AdamVariantOptions::AdamVariantOptions(AdamVariantKind kind) : AdamVariantOptions(kind, DefaultLr(kind)) {}

AdamVariantOptions::AdamVariantOptions(AdamVariantKind kind, double lr) : kind_(kind), lr_(lr) {}

const char* AdamVariantOptions::kind_name() const {
  switch (kind_) {
    case AdamVariantKind::kNAdam: return "NAdam";
    case AdamVariantKind::kRAdam: return "RAdam";
    case AdamVariantKind::kAdamax: return "Adamax";
  }
  return "?";
}

std::map<std::string, double> AdamVariantOptions::SavedOptions() const {
  std::map<std::string, double> m = {{"lr", lr_},   {"betas.0", std::get<0>(betas_)}, {"betas.1", std::get<1>(betas_)},
                                     {"eps", eps_}, {"weight_decay", weight_decay_}};
  if (kind_ == AdamVariantKind::kNAdam) m["momentum_decay"] = momentum_decay_;
  return m;
}

Status AdamVariantOptions::RestoreOptions(const std::map<std::string, double>& saved, const std::string& where) {
  YC_ASSIGN_OR_RETURN(const double lr, SavedOption(saved, "lr", where));
  YC_ASSIGN_OR_RETURN(const double beta1, SavedOption(saved, "betas.0", where));
  YC_ASSIGN_OR_RETURN(const double beta2, SavedOption(saved, "betas.1", where));
  YC_ASSIGN_OR_RETURN(const double eps, SavedOption(saved, "eps", where));
  YC_ASSIGN_OR_RETURN(const double weight_decay, SavedOption(saved, "weight_decay", where));
  if (kind_ == AdamVariantKind::kNAdam) {
    YC_ASSIGN_OR_RETURN(const double momentum_decay, SavedOption(saved, "momentum_decay", where));
    momentum_decay_ = momentum_decay;
  }
  lr_ = lr;
  betas_ = std::make_tuple(beta1, beta2);
  eps_ = eps;
  weight_decay_ = weight_decay;
  return Status::OK();
}

Result<std::unique_ptr<optim::OptimizerParamState>> AdamVariantOptions::MakeState(const SavedParamState& saved,
                                                                                 const at::Tensor& param,
                                                                                 const std::string& where) const {
  auto s = std::make_unique<AdamVariantParamState>();
  YC_ASSIGN_OR_RETURN(const int64_t step, SavedStateStep(saved, where));
  s->step(step);
  YC_ASSIGN_OR_RETURN(at::Tensor exp_avg, SavedStateTensor(saved, "exp_avg", param, true, where));
  s->exp_avg(exp_avg);
  if (kind_ == AdamVariantKind::kAdamax) {
    YC_ASSIGN_OR_RETURN(at::Tensor exp_inf, SavedStateTensor(saved, "exp_inf", param, true, where));
    s->exp_inf(exp_inf);
  } else {
    YC_ASSIGN_OR_RETURN(at::Tensor exp_avg_sq, SavedStateTensor(saved, "exp_avg_sq", param, true, where));
    s->exp_avg_sq(exp_avg_sq);
  }
  if (kind_ == AdamVariantKind::kNAdam) {
    YC_ASSIGN_OR_RETURN(at::Tensor mu_product, SavedStateScalar(saved, "mu_product", where));
    s->mu_product(mu_product);
  }
  return std::unique_ptr<optim::OptimizerParamState>(std::move(s));
}

void AdamVariantParamState::SaveTo(SavedParamState* out) const {
  out->ints["step"] = step_;
  for (const auto& [name, t] : {std::make_pair("exp_avg", exp_avg_), std::make_pair("exp_avg_sq", exp_avg_sq_),
                                std::make_pair("exp_inf", exp_inf_), std::make_pair("mu_product", mu_product_)}) {
    if (t.defined()) out->tensors[name] = t;
  }
}

AdamVariant::AdamVariant(std::vector<optim::OptimizerParamGroup> param_groups, AdamVariantOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamVariantOptions>(defaults)), kind_(defaults.kind()) {
  // torch.optim's argument checks.
  TORCH_CHECK(defaults.lr() >= 0, "Invalid learning rate: ", defaults.lr());
  TORCH_CHECK(defaults.eps() >= 0, "Invalid epsilon value: ", defaults.eps());
  const auto [beta1, beta2] = defaults.betas();
  TORCH_CHECK(0 <= beta1 && beta1 < 1.0, "Invalid beta parameter at index 0: ", beta1);
  TORCH_CHECK(0 <= beta2 && beta2 < 1.0, "Invalid beta parameter at index 1: ", beta2);
  TORCH_CHECK(defaults.weight_decay() >= 0, "Invalid weight_decay value: ", defaults.weight_decay());
  TORCH_CHECK(defaults.momentum_decay() >= 0, "Invalid momentum_decay value: ", defaults.momentum_decay());
}

at::Tensor AdamVariant::step(LossClosure closure) {
  c10::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    c10::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const AdamVariantOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), o.kind_name(), " does not support sparse gradients");
      auto it = state_.find(OptimizerStateKey(p));
      if (it == state_.end()) it = state_.emplace(OptimizerStateKey(p), FreshState(o.kind(), p)).first;
      auto& s = static_cast<AdamVariantParamState&>(*it->second);
      s.step(s.step() + 1);
      const double step = static_cast<double>(s.step());
      const at::Tensor grad = o.weight_decay() != 0 ? p.grad().add(p, o.weight_decay()) : p.grad();
      switch (o.kind()) {
        case AdamVariantKind::kNAdam: NAdamUpdate(o, s, p, grad, step); break;
        case AdamVariantKind::kRAdam: RAdamUpdate(o, s, p, grad, step); break;
        case AdamVariantKind::kAdamax: AdamaxUpdate(o, s, p, grad, step); break;
      }
    }
  }
  return loss;
}

}  // namespace yc::trainer
