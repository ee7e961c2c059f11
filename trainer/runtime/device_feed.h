// The device side of the data path: which device to run on and how it is tuned, where the loader's
// batch buffers live, and how a batch gets from host memory into float tensors on the device.
//
// On CUDA the loader writes every batch straight into pinned (page-locked) host buffers
// (PinnedAllocator); Stage() starts the batch's host-to-device copy with non_blocking on a side stream
// and records an event, so the copy of batch k+1 runs while the compute stream works on batch k;
// Take() makes the compute stream wait for that event and converts uint8 -> float / 255 there. The
// pinned buffer goes back to the loader's pool only once its copy has finished. With channels_last the
// loader writes NHWC, which viewed as NCHW is already channels_last: no transpose anywhere.
// On the CPU, Stage() converts at once and Take() hands the result out.
//
// All CUDA API use is confined to device_feed.cc and compiled only when LibTorch has CUDA
// (YOLOCACHE_TORCH_CUDA, set by trainer/CMakeLists.txt): Debian's CPU LibTorch ships the CUDA headers
// but not the libraries.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include <ATen/ATen.h>

#include "base/status.h"
#include "loader/batch.h"
#include "loader/options.h"

namespace yc::trainer {

// "" / "auto": cuda:0 when CUDA is usable, else cpu; "cpu"; "cuda"; "cuda:N"; "N" (Ultralytics device=0).
// A CUDA device on a build or machine without CUDA is InvalidArgument, naming what is missing.
Result<at::Device> ParseDevice(const std::string& text);
bool CudaAvailable();
// Whether this binary was built against a LibTorch with CUDA.
bool BuiltWithCuda();

// CUDA: cuDNN autotuning (cudnn.benchmark) as asked, TF32 for matmul and convolutions (the legacy
// switches on LibTorch < 2.10, the Float32Precision API from 2.10 on; never both). CPU: nothing.
// Returns a one-line description.
std::string ConfigureDevice(const at::Device& device, bool cudnn_benchmark = false);
// Waits for all queued work on the device (no-op on CPU).
void SynchronizeDevice(const at::Device& device);
// Bytes held by LibTorch's caching allocator on a CUDA device (Ultralytics' memory_reserved); 0 on CPU.
double DeviceMemoryReservedBytes(const at::Device& device);
// A CUDA device's memory as Ultralytics' AutoBatch reads it (torch.cuda.get_device_properties,
// memory_reserved, memory_allocated), in bytes; all 0 on CPU.
struct DeviceMemory {
  double total = 0, reserved = 0, allocated = 0;
};
DeviceMemory DeviceMemoryNow(const at::Device& device);
// Gives the caching allocator's unused blocks back to the device (torch.cuda.empty_cache); no-op on CPU.
void EmptyDeviceCache(const at::Device& device);
// "NVIDIA H200" / "cpu (2 threads)".
std::string DeviceDescription(const at::Device& device);

// Pinned host memory for the loader's batch pool (CUDA); plain aligned memory when CUDA is absent.
// Each buffer is a pinned LibTorch tensor kept alive in a map until Free.
std::shared_ptr<BufferAllocator> MakeBatchAllocator(const at::Device& device);

struct DeviceBatch {
  at::Tensor images;          // (B, 3, H, W) float in [0, 1] on the device (channels_last when asked)
  at::Tensor labels;          // (N, 6) float [batch_idx, cls, cx, cy, w, h] on the device
  int64_t max_boxes = 0;      // most labels of any one image (the loss's padding width, host-computed)
  int size = 0, height = 0, width = 0;
  std::shared_ptr<const Batch> host;  // the loader's batch (samples, host labels)
};

class DeviceFeed {
 public:
  // nc: labels with a class outside [0, nc) are refused (DataError naming the image).
  DeviceFeed(const at::Device& device, bool channels_last, int64_t nc);
  ~DeviceFeed();  // waits for copies still in flight
  DeviceFeed(const DeviceFeed&) = delete;
  DeviceFeed& operator=(const DeviceFeed&) = delete;

  // The loader layout this feed wants (NHWC for channels_last on CUDA, else NCHW).
  ImageLayout layout() const;

  // Starts moving `batch` to the device. Batches come out of Take() in the order they were staged.
  Status Stage(std::shared_ptr<Batch> batch);
  // The oldest staged batch, ready for use on the current stream. Error if nothing is staged.
  Result<DeviceBatch> Take();
  size_t staged() const;

  // Host label rows -> (max boxes per image), checking batch indices and classes.
  static Result<int64_t> CheckLabels(const Batch& batch, int64_t nc);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace yc::trainer
