// RAII autocast region for LibTorch, mirroring Python's torch.autocast context manager (which C++ lacks):
// saves the thread-local enabled flag, dtype and cache flag of one device type, sets them, bumps the
// nesting level; on exit clears the cast cache when leaving the outermost region (otherwise the next
// forward after optimizer.step() would reuse stale low-precision weights) and restores the saved state.
//
//   { AutocastGuard amp(at::kCUDA, true, at::kBFloat16); out = model->forward(x); }   // bf16 forward
//   { AutocastGuard off(at::kCUDA, false); loss = ...; }                               // fp32 island
//
// Supported device types: CUDA and CPU. LibTorch 1.13's CPU autocast accepts only bf16.
#pragma once

#include <ATen/ATen.h>

namespace yc::trainer {

class AutocastGuard {
 public:
  AutocastGuard(at::DeviceType device, bool enabled, at::ScalarType dtype = at::kBFloat16, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

  // Whether autocast is on for this device type on the calling thread.
  static bool IsEnabled(at::DeviceType device);
  static at::ScalarType Dtype(at::DeviceType device);

 private:
  at::DeviceType device_;
  bool prev_enabled_;
  at::ScalarType prev_dtype_;
  bool prev_cache_;
};

}  // namespace yc::trainer
