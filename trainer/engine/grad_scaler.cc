#include "trainer/engine/grad_scaler.h"

#include <torch/version.h>

// CPU kernels for the AMP ops arrived with PyTorch 2.3 (pytorch#109281); CUDA always had them.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define YC_AMP_OPS_ON_CPU 1
#else
#define YC_AMP_OPS_ON_CPU 0
#endif

namespace yc::trainer {

namespace {

bool AtenAmpOps(const at::Device& device) { return device.is_cuda() || YC_AMP_OPS_ON_CPU; }

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {}

void GradScaler::LazyInit(const at::Device& device) {
  if (scale_.defined() && scale_.device() == device) return;
  const auto f = at::TensorOptions().dtype(at::kFloat).device(device);
  if (scale_.defined()) {  // moved to another device: keep the state
    scale_ = scale_.to(device);
    growth_tracker_ = growth_tracker_.to(device);
    found_inf_ = found_inf_.to(device);
    return;
  }
  scale_ = at::full({1}, options_.init_scale, f);
  growth_tracker_ = at::zeros({1}, f.dtype(at::kInt));
  found_inf_ = at::zeros({1}, f);
}

at::Tensor GradScaler::Scale(const at::Tensor& loss) {
  if (!options_.enabled) return loss;
  LazyInit(loss.device());
  return loss * scale_.to(loss.scalar_type()).squeeze();
}

void GradScaler::UnscaleGrads(std::vector<at::Tensor>& grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  if (grads.empty()) return;
  if (AtenAmpOps(found_inf.device())) {
    // The kernel wants tensors grouped by device and dtype.
    std::vector<std::vector<at::Tensor>> groups;
    std::vector<std::pair<at::Device, at::ScalarType>> keys;
    for (auto& g : grads) {
      const auto key = std::make_pair(g.device(), g.scalar_type());
      size_t k = 0;
      while (k < keys.size() && keys[k] != key) ++k;
      if (k == keys.size()) {
        keys.push_back(key);
        groups.emplace_back();
      }
      groups[k].push_back(g);
    }
    for (auto& group : groups) at::_amp_foreach_non_finite_check_and_unscale_(group, found_inf, inv_scale);
    return;
  }
  // Plain-op fallback: same results, a few launches per tensor.
  for (auto& g : grads) {
    found_inf.copy_(at::maximum(found_inf, g.isfinite().all().logical_not().to(at::kFloat).reshape({1})));
    g.mul_(inv_scale.to(g.scalar_type()));
  }
}

void GradScaler::UpdateScale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                             double growth_factor, double backoff_factor, int64_t growth_interval) {
  if (AtenAmpOps(scale.device())) {
    at::_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
    return;
  }
  // Mirror of the kernel: overflow -> back off and reset; else count, and grow (if still finite) when the
  // count reaches the interval.
  auto inf = found_inf.gt(0);
  auto successful = growth_tracker + 1;
  auto grow = successful.ge(growth_interval);
  auto grown = scale * growth_factor;
  auto clean = at::where(grow.logical_and(grown.isfinite()), grown, scale);
  scale.copy_(at::where(inf, scale * backoff_factor, clean));
  growth_tracker.copy_(at::where(inf.logical_or(grow), at::zeros_like(successful), successful));
}

Status GradScaler::Unscale(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled || unscaled_) return Status::OK();
  grads_.clear();
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().scalar_type() == at::kHalf) {
        return Status::InvalidArgument("grad scaler: attempting to unscale FP16 gradients (keep fp32 weights)");
      }
      grads_.push_back(p.grad());
    }
  }
  if (grads_.empty()) {
    unscaled_ = true;
    return Status::OK();
  }
  LazyInit(grads_.front().device());
  found_inf_.zero_();
  // 1 / scale computed in double then rounded, as PyTorch does.
  auto inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  UnscaleGrads(grads_, found_inf_, inv_scale);
  unscaled_ = true;
  return Status::OK();
}

Result<bool> GradScaler::Step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  YC_RETURN_IF_ERROR(Unscale(optimizer));
  if (found_inf_.defined() && found_inf_.item<float>() != 0.0f) return false;
  optimizer.step();
  return true;
}

void GradScaler::Update() {
  if (!options_.enabled) return;
  if (scale_.defined() && found_inf_.defined()) {
    UpdateScale(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor,
                options_.growth_interval);
    found_inf_.zero_();
  }
  unscaled_ = false;
}

int64_t GradScaler::growth_value() const {
  return growth_tracker_.defined() ? static_cast<int64_t>(growth_tracker_.item<int>()) : 0;
}

void GradScaler::LoadState(double scale, int64_t growth_tracker, const at::Device& device) {
  LazyInit(device);
  scale_.fill_(scale);
  growth_tracker_.fill_(growth_tracker);
}

double GradScaler::scale_value() const {
  return scale_.defined() ? scale_.item<double>() : (options_.enabled ? options_.init_scale : 1.0);
}

}  // namespace yc::trainer
