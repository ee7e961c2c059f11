#include "trainer/runtime/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

// torch >= 2.4 has device-generic autocast calls; older ones (Debian's 1.13) have per-device names.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define YC_AUTOCAST_DEVICE_API 1
#else
#define YC_AUTOCAST_DEVICE_API 0
#endif

namespace yc::trainer {

namespace {

// Autocast only knows CUDA and CPU here; anything else is treated as CPU's (a no-op for its kernels).
at::DeviceType Normalise(at::DeviceType d) { return d == at::kCUDA ? at::kCUDA : at::kCPU; }

void SetEnabled(at::DeviceType d, bool on) {
#if YC_AUTOCAST_DEVICE_API
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == at::kCUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
#endif
}

void SetDtype(at::DeviceType d, at::ScalarType t) {
#if YC_AUTOCAST_DEVICE_API
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == at::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
#endif
}

}  // namespace

bool AutocastGuard::IsEnabled(at::DeviceType device) {
  device = Normalise(device);
#if YC_AUTOCAST_DEVICE_API
  return at::autocast::is_autocast_enabled(device);
#else
  return device == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

at::ScalarType AutocastGuard::Dtype(at::DeviceType device) {
  device = Normalise(device);
#if YC_AUTOCAST_DEVICE_API
  return at::autocast::get_autocast_dtype(device);
#else
  return device == at::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

AutocastGuard::AutocastGuard(at::DeviceType device, bool enabled, at::ScalarType dtype, bool cache_enabled)
    : device_(Normalise(device)),
      prev_enabled_(IsEnabled(device_)),
      prev_dtype_(Dtype(device_)),
      prev_cache_(at::autocast::is_autocast_cache_enabled()) {
  // 1.13's CPU autocast rejects anything but bf16 (a TORCH_CHECK that throws); keep the old dtype then.
  const bool dtype_ok = device_ == at::kCUDA || dtype == at::kBFloat16 || YC_AUTOCAST_DEVICE_API;
  if (dtype_ok) SetDtype(device_, dtype);
  SetEnabled(device_, enabled && dtype_ok);
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(cache_enabled);
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetEnabled(device_, prev_enabled_);
  SetDtype(device_, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_);
}

}  // namespace yc::trainer
