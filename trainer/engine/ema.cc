#include "trainer/engine/ema.h"

#include <cmath>
#include <string>

#include <c10/core/GradMode.h>

namespace yc::trainer {

namespace {

// Floating-point parameters and buffers by qualified name, parameters first (state_dict content).
template <typename Fn>
void ForEachFloatState(const torch::nn::Module& m, Fn&& fn) {
  for (const auto& p : m.named_parameters(true)) {
    if (at::isFloatingType(p.value().scalar_type())) fn(p.key(), p.value());
  }
  for (const auto& b : m.named_buffers(true)) {
    if (at::isFloatingType(b.value().scalar_type())) fn(b.key(), b.value());
  }
}

}  // namespace

ModelEMA::ModelEMA(const torch::nn::Module& model, double decay, double tau, int64_t updates)
    : ema_(model.clone()), decay_(decay), tau_(tau), updates_(updates) {
  ema_->eval();
  for (auto& p : ema_->parameters(true)) p.set_requires_grad(false);
  ForEachFloatState(*ema_, [&](const std::string& name, const at::Tensor& t) {
    names_.push_back(name);
    dst_.push_back(t);
  });
}

double ModelEMA::DecayAt(int64_t updates, double decay, double tau) {
  return decay * (1.0 - std::exp(-static_cast<double>(updates) / tau));
}

Status ModelEMA::Update(const torch::nn::Module& model) {
  c10::NoGradGuard no_grad;
  if (src_owner_ != &model) {
    src_.clear();
    std::vector<std::string> names;
    ForEachFloatState(model, [&](const std::string& name, const at::Tensor& t) {
      names.push_back(name);
      src_.push_back(t);
    });
    if (names != names_) {
      src_.clear();
      return Status::InvalidArgument("model EMA: the model's parameters/buffers do not match the EMA copy");
    }
    src_owner_ = &model;
  }
  ++updates_;
  const double d = CurrentDecay();
  at::_foreach_mul_(dst_, d);
  at::_foreach_add_(dst_, src_, 1.0 - d);
  return Status::OK();
}

}  // namespace yc::trainer
