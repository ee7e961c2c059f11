#include "trainer/engine/autobatch.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include "trainer/runtime/autocast.h"
#include "trainer/runtime/device_feed.h"

namespace yc::trainer {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fG", bytes / kGiB);
  return buf;
}

// Bytes reserved after one forward + backward at `batch`; nullopt when the device runs out of memory.
std::optional<double> ProbeMemory(DetectionModel& copy, const at::Device& device, const AutoBatchRequest& r, int batch) {
  try {
    EmptyDeviceCache(device);
    at::Tensor x = at::rand({batch, 3, r.imgsz, r.imgsz}, at::TensorOptions().device(device));
    if (r.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    {
      AutocastGuard amp(device.type(), r.autocast_fp16, at::kHalf);
      DetectOutput out = copy->forward(x);
      at::Tensor loss = at::zeros({}, x.options().dtype(at::kFloat));
      for (const at::Tensor& f : out.feats) loss = loss + f.to(at::kFloat).sum();
      loss.backward();
    }
    SynchronizeDevice(device);
    const double reserved = DeviceMemoryNow(device).reserved;
    copy->zero_grad();
    return reserved;
  } catch (const c10::OutOfMemoryError&) {
    copy->zero_grad();
    EmptyDeviceCache(device);
    return std::nullopt;
  }
}

}  // namespace

int BatchForBudget(const std::vector<std::pair<int, double>>& points, double budget) {
  if (points.size() < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sx += x;
    sy += y;
    sxx += static_cast<double>(x) * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(points.size());
  const double denom = n * sxx - sx * sx;
  if (denom <= 0) return 0;
  const double slope = (n * sxy - sx * sy) / denom, intercept = (sy - slope * sx) / n;
  if (!(slope > 0)) return 0;
  return static_cast<int>((budget - intercept) / slope);
}

int AutoBatchSize(const DetectionModel& model, const at::Device& device, const AutoBatchRequest& r,
                  const std::function<void(const std::string&)>& say) {
  const std::string prefix = "AutoBatch: ";
  say(prefix + "Computing optimal batch size for imgsz=" + std::to_string(r.imgsz) + " at " +
      std::to_string(static_cast<int>(std::lround(r.fraction * 100))) + "% CUDA memory utilization.");
  if (!device.is_cuda()) {
    say(prefix + "intended for CUDA devices, using default batch-size " + std::to_string(r.fallback));
    return r.fallback;
  }
  const DeviceMemory m = DeviceMemoryNow(device);
  const double free = m.total - (m.reserved + m.allocated);
  say(prefix + DeviceDescription(device) + " " + Gb(m.total) + " total, " + Gb(m.reserved) + " reserved, " +
      Gb(m.allocated) + " allocated, " + Gb(free) + " free");
  const std::vector<int> sizes = m.total < 16 * kGiB ? std::vector<int>{1, 2, 4, 8, 16}
                                                      : std::vector<int>{1, 2, 4, 8, 16, 32, 64};
  auto copy = std::dynamic_pointer_cast<DetectionModelImpl>(model->clone(device));
  if (!copy) {
    say(prefix + "could not copy the model, using default batch-size " + std::to_string(r.fallback));
    return r.fallback;
  }
  DetectionModel probe(copy);
  probe->train();
  // Points whose memory rises with the batch, below the device's total (Ultralytics' filter).
  std::vector<std::pair<int, double>> points;
  std::optional<int> first_failure;
  double previous = 0;
  for (int b : sizes) {
    const std::optional<double> bytes = ProbeMemory(probe, device, r, b);
    if (!bytes) {
      if (!first_failure) first_failure = b;
      continue;
    }
    if (*bytes > 0 && *bytes < m.total && (points.empty() || *bytes > previous)) points.emplace_back(b, *bytes);
    previous = *bytes;
  }
  probe = nullptr;
  copy.reset();
  EmptyDeviceCache(device);
  int b = BatchForBudget(points, free * r.fraction);
  if (first_failure && b >= *first_failure) {  // the line crosses a size that failed: the last one below it
    b = 1;
    for (int s : sizes) b = s < *first_failure ? s : b;
  }
  if (b < 1 || b > 1024) {
    say(prefix + "batch=" + std::to_string(b) + " outside safe range, using default batch-size " + std::to_string(r.fallback) + ".");
    return r.fallback;
  }
  say(prefix + "Using batch-size " + std::to_string(b) + " for " + DeviceDescription(device));
  return b;
}

}  // namespace yc::trainer
