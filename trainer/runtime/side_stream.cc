#include "trainer/runtime/side_stream.h"

#include <map>
#include <mutex>
#include <utility>

#ifndef YOLOCACHE_TORCH_CUDA
#define YOLOCACHE_TORCH_CUDA 0
#endif
#if YOLOCACHE_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "trainer/runtime/dedicated_stream.h"
#endif

namespace yc::trainer {

#if YOLOCACHE_TORCH_CUDA

c10::cuda::CUDAStream DedicatedCudaStream(c10::DeviceIndex device, DedicatedStreamUse use) {
  static std::mutex mu;
  static std::map<std::pair<c10::DeviceIndex, DedicatedStreamUse>, cudaStream_t> streams;
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find({device, use});
  if (it == streams.end()) {
    c10::cuda::CUDAGuard on(device);
    // Side work (a validation beside the training) at the device's highest priority, so that its kernels go
    // first as the training's free the SMs: at the default priority an epoch's end took as long as the epoch
    // it ran beside on an H100 (BENCHMARKS.md, "Lease of 2026-12-07, second machine"; the effect of the
    // priority is still to be measured there). Graph captures keep the default priority.
    int least = 0, greatest = 0;
    C10_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    const int priority = use == DedicatedStreamUse::kSideWork ? greatest : least;
    cudaStream_t s = nullptr;
    C10_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
    it = streams.emplace(std::make_pair(device, use), s).first;
  }
  return c10::cuda::getStreamFromExternal(it->second, device);
}

namespace {

c10::DeviceIndex IndexOf(const at::Device& device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}

}  // namespace

StreamFence StreamFence::Record(const at::Device& device) {
  StreamFence fence;
  if (!device.is_cuda()) return fence;
  auto event = std::make_shared<at::cuda::CUDAEvent>();
  event->record(c10::cuda::getCurrentCUDAStream(IndexOf(device)));
  fence.event_ = event;
  return fence;
}

void StreamFence::WaitOnCurrentStream() const {
  if (!event_) return;
  auto* event = static_cast<at::cuda::CUDAEvent*>(event_.get());
  event->block(c10::cuda::getCurrentCUDAStream(event->device_index()));
}

SideStreamScope::SideStreamScope(const at::Device& device) {
  if (device.is_cuda()) guard_ = std::make_shared<c10::cuda::CUDAStreamGuard>(DedicatedCudaStream(IndexOf(device), DedicatedStreamUse::kSideWork));
}

SideStreamScope::~SideStreamScope() = default;

void SynchronizeCurrentStream(const at::Device& device) {
  if (device.is_cuda()) c10::cuda::getCurrentCUDAStream(IndexOf(device)).synchronize();
}

#else

StreamFence StreamFence::Record(const at::Device&) { return {}; }
void StreamFence::WaitOnCurrentStream() const {}
SideStreamScope::SideStreamScope(const at::Device&) {}
SideStreamScope::~SideStreamScope() = default;
void SynchronizeCurrentStream(const at::Device&) {}

#endif

}  // namespace yc::trainer
