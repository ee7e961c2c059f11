// GPU busy percentage over a stretch of training, sampled by a background thread from NVML
// (nvmlDeviceGetUtilizationRates: the fraction of time a kernel was running). NVML is opened with
// dlopen("libnvidia-ml.so.1") at run time, so nothing links against it and machines without an NVIDIA
// driver simply report "n/a".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace yc::trainer {

class GpuMonitor {
 public:
  // cuda_index: the CUDA device index LibTorch uses. NVML numbers physical devices; when
  // CUDA_VISIBLE_DEVICES is a list of indices the entry at cuda_index is used.
  explicit GpuMonitor(int cuda_index, int interval_ms = 200);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool available() const { return available_; }
  const std::string& unavailable_reason() const { return reason_; }

  // Sampling runs only between Start and Stop (e.g. training epochs, not validation or checkpoints).
  void Start();
  void Stop();

  // Mean utilisation (0..100) over all samples so far, or -1 when NVML is unavailable or nothing was sampled.
  double MeanBusyPercent() const;
  int64_t samples() const;
  // "87.3%" or "n/a".
  std::string Describe() const;

  // The NVML device index for a CUDA index under a given CUDA_VISIBLE_DEVICES value (null = unset).
  static int NvmlIndexFor(int cuda_index, const char* cuda_visible_devices);

  struct Nvml;

 private:
  void Loop();

  std::unique_ptr<Nvml> nvml_;
  bool available_ = false;
  std::string reason_;
  int interval_ms_;
  std::atomic<bool> running_{false};
  std::atomic<bool> quit_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace yc::trainer
