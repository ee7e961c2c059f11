#include "trainer/engine/fused_step.h"

#include <cmath>
#include <optional>
#include <string>

#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/version.h>

#include "trainer/io/optimizer_state.h"

// The fused Adam/AdamW/SGD kernels (CUDA and CPU) are all there from PyTorch 2.4.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define YC_HAS_FUSED_OPTIM 1
#else
#define YC_HAS_FUSED_OPTIM 0
#endif

namespace yc::trainer {

namespace optim = torch::optim;

namespace {

// The optimizer's state of `p`, made by `make()` when `p` has none yet (torch::optim creates it on a
// parameter's first step).
template <typename State, typename Make>
State& StateOf(optim::Optimizer& opt, const at::Tensor& p, Make make) {
  auto& states = opt.state();
  auto key = OptimizerStateKey(p);
  auto it = states.find(key);
  if (it == states.end()) it = states.emplace(key, make()).first;
  return static_cast<State&>(*it->second);
}

template <typename State>
State& AdamState(optim::Optimizer& opt, const at::Tensor& p) {
  return StateOf<State>(opt, p, [&p] {
    auto s = std::make_unique<State>();
    s->step(0);
    s->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    s->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    return s;
  });
}

// Adam and AdamW keep the same fields in two state types.
struct AdamFields {
  at::Tensor exp_avg, exp_avg_sq;
  int64_t step = 0;
};

template <typename State>
AdamFields AdamFieldsOf(optim::Optimizer& opt, const at::Tensor& p) {
  State& s = AdamState<State>(opt, p);
  return {s.exp_avg(), s.exp_avg_sq(), s.step()};
}

optim::SGDParamState& SgdState(optim::Optimizer& opt, const at::Tensor& p) {
  // torch::optim starts the buffer as a copy of the first gradient; a zero buffer updated with
  // dampening 0 holds exactly that after the first step, and stays zero if that step is skipped.
  return StateOf<optim::SGDParamState>(opt, p, [&p] {
    auto s = std::make_unique<optim::SGDParamState>();
    s->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
    return s;
  });
}

#if YC_HAS_FUSED_OPTIM
std::optional<at::Tensor> Optional(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}
#endif

}  // namespace

bool FusedStep::Supported(const optim::Optimizer& optimizer) {
  if (!YC_HAS_FUSED_OPTIM) return false;
  for (const auto& group : optimizer.param_groups()) {
    const auto& o = group.options();
    if (const auto* a = dynamic_cast<const optim::AdamOptions*>(&o)) {
      if (a->amsgrad()) return false;
    } else if (const auto* w = dynamic_cast<const optim::AdamWOptions*>(&o)) {
      if (w->amsgrad()) return false;
    } else if (const auto* s = dynamic_cast<const optim::SGDOptions*>(&o)) {
      if (!(s->momentum() > 0)) return false;
    } else {
      return false;
    }
  }
  return true;
}

FusedStep::FusedStep(optim::Optimizer& optimizer) : optimizer_(optimizer), kind_(Kind::kSGD) {
  if (dynamic_cast<optim::AdamW*>(&optimizer) != nullptr) {
    kind_ = Kind::kAdamW;
  } else if (dynamic_cast<optim::Adam*>(&optimizer) != nullptr) {
    kind_ = Kind::kAdam;
  }
  TORCH_CHECK(Supported(optimizer), "FusedStep: this optimizer or LibTorch has no fused step");
}

at::Tensor& FusedStep::DeviceStep(const at::Tensor& param, int64_t host_step) {
  auto it = steps_.find(param.unsafeGetTensorImpl());
  if (it == steps_.end()) {
    auto t = at::full({}, static_cast<double>(host_step), param.options().dtype(at::kFloat));
    it = steps_.emplace(param.unsafeGetTensorImpl(), std::move(t)).first;
  }
  return it->second;
}

void FusedStep::Step(const at::Tensor& found_inf, const std::vector<at::Tensor>* group_lrs) {
  c10::NoGradGuard no_grad;
  size_t group_index = 0;
  for (auto& group : optimizer_.param_groups()) {
    const at::Tensor* lr = group_lrs != nullptr ? &(*group_lrs)[group_index] : nullptr;
    ++group_index;
    params_.clear();
    grads_.clear();
    first_.clear();
    second_.clear();
    step_list_.clear();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params_.push_back(p);
      grads_.push_back(p.grad());
      if (kind_ == Kind::kSGD) {
        first_.push_back(SgdState(optimizer_, p).momentum_buffer());
        continue;
      }
      const AdamFields f = kind_ == Kind::kAdamW ? AdamFieldsOf<optim::AdamWParamState>(optimizer_, p)
                                                 : AdamFieldsOf<optim::AdamParamState>(optimizer_, p);
      first_.push_back(f.exp_avg);
      second_.push_back(f.exp_avg_sq);
      step_list_.push_back(DeviceStep(p, f.step));
    }
    if (params_.empty()) continue;
#if YC_HAS_FUSED_OPTIM
    const std::optional<at::Tensor> inf = Optional(found_inf);
    if (kind_ == Kind::kSGD) {
      const auto& o = static_cast<const optim::SGDOptions&>(group.options());
      if (lr != nullptr) {
        at::_fused_sgd_(params_, grads_, first_, o.weight_decay(), o.momentum(), *lr, o.dampening(), o.nesterov(),
                        /*maximize=*/false, /*is_first_step=*/false, /*grad_scale=*/std::nullopt, inf);
      } else {
        at::_fused_sgd_(params_, grads_, first_, o.weight_decay(), o.momentum(), o.lr(), o.dampening(), o.nesterov(),
                        /*maximize=*/false, /*is_first_step=*/false, /*grad_scale=*/std::nullopt, inf);
      }
      continue;
    }
    // Adam's bias correction counts taken steps: count this one, and take it back where it was skipped.
    at::_foreach_add_(step_list_, 1.0);
    if (found_inf.defined()) {
      found_inf_list_.assign(step_list_.size(), found_inf.reshape({}));
      at::_foreach_sub_(step_list_, found_inf_list_);
    }
    const std::vector<at::Tensor> no_max;  // amsgrad off: the kernel reads no max_exp_avg_sqs
    // The same call with the lr as a double or as a device tensor (the kernels' two overloads).
    auto adam = [&](auto fused, const auto& o) {
      if (lr != nullptr) {
        fused(params_, grads_, first_, second_, no_max, step_list_, *lr, std::get<0>(o.betas()), std::get<1>(o.betas()),
              o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/std::nullopt, inf);
      } else {
        fused(params_, grads_, first_, second_, no_max, step_list_, o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()),
              o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/std::nullopt, inf);
      }
    };
    if (kind_ == Kind::kAdamW) {
      adam([](auto&&... a) { at::_fused_adamw_(a...); }, static_cast<const optim::AdamWOptions&>(group.options()));
    } else {
      adam([](auto&&... a) { at::_fused_adam_(a...); }, static_cast<const optim::AdamOptions&>(group.options()));
    }
#else
    (void)found_inf;
    (void)lr;
    TORCH_CHECK(false, "FusedStep: fused optimizer kernels need LibTorch 2.4 or later");
#endif
  }
}

void FusedStep::SyncState() {
  if (kind_ == Kind::kSGD || steps_.empty()) return;
  std::vector<at::Tensor> params, counts;
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      auto it = steps_.find(p.unsafeGetTensorImpl());
      if (it == steps_.end()) continue;
      params.push_back(p);
      counts.push_back(it->second);
    }
  }
  if (params.empty()) return;
  const at::Tensor host = at::stack(counts).to(at::kCPU, at::kDouble);  // one device-to-host copy
  const double* n = host.data_ptr<double>();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto step = static_cast<int64_t>(std::llround(n[i]));
    if (kind_ == Kind::kAdamW) {
      AdamState<optim::AdamWParamState>(optimizer_, params[i]).step(step);
    } else {
      AdamState<optim::AdamParamState>(optimizer_, params[i]).step(step);
    }
  }
}

}  // namespace yc::trainer
