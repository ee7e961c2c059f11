#include "trainer/engine/ema.h"

#include <cmath>
#include <string>

#include <c10/core/GradMode.h>
#include <torch/version.h>

// _foreach_mul with a tensor scalar (one launch for all tensors) exists from PyTorch 2.1.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define YC_FOREACH_TENSOR_SCALAR 1
#else
#define YC_FOREACH_TENSOR_SCALAR 0
#endif

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

Status ModelEMA::BindSource(const torch::nn::Module& model) {
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
  return Status::OK();
}

Status ModelEMA::Update(const torch::nn::Module& model) {
  c10::NoGradGuard no_grad;
  YC_RETURN_IF_ERROR(BindSource(model));
  ++updates_;
  const double d = CurrentDecay();
  at::_foreach_mul_(dst_, d);
  at::_foreach_add_(dst_, src_, 1.0 - d);
  return Status::OK();
}

void ModelEMA::LoadDeviceCount() {
  if (!device_updates_.defined()) device_updates_ = at::zeros({}, dst_.front().options().dtype(at::kFloat));
  device_updates_.fill_(static_cast<double>(updates_));
}

Status ModelEMA::UpdateOnDevice(const torch::nn::Module& model) {
  c10::NoGradGuard no_grad;
  YC_RETURN_IF_ERROR(BindSource(model));
  if (!device_updates_.defined()) return Status::InvalidArgument("model EMA: LoadDeviceCount() first");
  device_updates_.add_(1.0);
  const at::Tensor d = device_updates_.div(-tau_).exp().neg().add(1.0).mul(decay_);  // DecayAt, on the device
  const at::Tensor keep = d.neg().add(1.0);
#if YC_FOREACH_TENSOR_SCALAR
  at::_foreach_mul_(dst_, d);
  at::_foreach_add_(dst_, at::_foreach_mul(src_, keep));
#else
  for (size_t i = 0; i < dst_.size(); ++i) dst_[i].mul_(d).add_(src_[i] * keep);
#endif
  return Status::OK();
}

}  // namespace yc::trainer
