#include "trainer/runtime/gpu_monitor.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace yc::trainer {

// The few NVML declarations used (nvml.h is not needed: the ABI of these calls is stable). Named, not
// anonymous: GpuMonitor::Nvml below holds them.
namespace nvml_abi {
using NvmlReturn = int;  // NVML_SUCCESS == 0
struct NvmlDeviceSt;
using NvmlDevice = NvmlDeviceSt*;
struct NvmlUtilization {
  unsigned int gpu;     // percent of time a kernel was executing over the last sample period
  unsigned int memory;  // percent of time device memory was being read or written
};
}  // namespace nvml_abi
using nvml_abi::NvmlDevice;
using nvml_abi::NvmlReturn;
using nvml_abi::NvmlUtilization;

namespace {

std::vector<std::string> SplitList(const char* text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
  }
  return out;
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

struct GpuMonitor::Nvml {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlDevice device = nullptr;
  bool initialised = false;

  ~Nvml() {
    if (initialised && shutdown != nullptr) shutdown();
    if (lib != nullptr) dlclose(lib);
  }
};

int GpuMonitor::NvmlIndexFor(int cuda_index, const char* cuda_visible_devices) {
  if (cuda_visible_devices == nullptr) return cuda_index;
  const auto items = SplitList(cuda_visible_devices);
  if (cuda_index < 0 || static_cast<size_t>(cuda_index) >= items.size()) return -1;
  const std::string& item = items[static_cast<size_t>(cuda_index)];
  return AllDigits(item) ? std::atoi(item.c_str()) : -1;
}

GpuMonitor::GpuMonitor(int cuda_index, int interval_ms) : nvml_(std::make_unique<Nvml>()), interval_ms_(interval_ms) {
  Nvml& n = *nvml_;
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (n.lib == nullptr) {
    reason_ = "libnvidia-ml.so.1 not found";
    return;
  }
  n.init = reinterpret_cast<NvmlReturn (*)()>(dlsym(n.lib, "nvmlInit_v2"));
  n.shutdown = reinterpret_cast<NvmlReturn (*)()>(dlsym(n.lib, "nvmlShutdown"));
  n.by_index = reinterpret_cast<NvmlReturn (*)(unsigned int, NvmlDevice*)>(dlsym(n.lib, "nvmlDeviceGetHandleByIndex_v2"));
  n.by_uuid = reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(dlsym(n.lib, "nvmlDeviceGetHandleByUUID"));
  n.utilization =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlUtilization*)>(dlsym(n.lib, "nvmlDeviceGetUtilizationRates"));
  if (n.init == nullptr || n.by_index == nullptr || n.utilization == nullptr) {
    reason_ = "NVML lacks the needed entry points";
    return;
  }
  if (n.init() != 0) {
    reason_ = "nvmlInit failed";
    return;
  }
  n.initialised = true;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const int index = NvmlIndexFor(cuda_index, visible);
  NvmlReturn rc = -1;
  if (index >= 0) {
    rc = n.by_index(static_cast<unsigned int>(index), &n.device);
  } else if (visible != nullptr && n.by_uuid != nullptr) {
    const auto items = SplitList(visible);
    if (cuda_index >= 0 && static_cast<size_t>(cuda_index) < items.size()) {
      rc = n.by_uuid(items[static_cast<size_t>(cuda_index)].c_str(), &n.device);
    }
  }
  if (rc != 0 || n.device == nullptr) {
    reason_ = "no NVML device for cuda:" + std::to_string(cuda_index);
    return;
  }
  NvmlUtilization u{};
  if (n.utilization(n.device, &u) != 0) {
    reason_ = "utilisation query not supported";
    return;
  }
  available_ = true;
  thread_ = std::thread([this] { Loop(); });
}

GpuMonitor::~GpuMonitor() {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
}

void GpuMonitor::Start() { running_ = true; }
void GpuMonitor::Stop() { running_ = false; }

void GpuMonitor::Loop() {
  const auto step = std::chrono::milliseconds(std::max(10, interval_ms_));
  while (!quit_) {
    std::this_thread::sleep_for(step);
    if (!running_ || quit_) continue;
    NvmlUtilization u{};
    if (nvml_->utilization(nvml_->device, &u) == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      sum_ += u.gpu;
      ++count_;
    }
  }
}

double GpuMonitor::MeanBusyPercent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_ > 0 ? sum_ / static_cast<double>(count_) : -1.0;
}

int64_t GpuMonitor::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

std::string GpuMonitor::Describe() const {
  const double p = MeanBusyPercent();
  if (p < 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", p);
  return buf;
}

}  // namespace yc::trainer
