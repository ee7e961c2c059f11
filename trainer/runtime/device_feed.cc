#include "trainer/runtime/device_feed.h"
#include "trainer/runtime/exception_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#ifndef YOLOCACHE_TORCH_CUDA
#define YOLOCACHE_TORCH_CUDA 0
#endif

#if YOLOCACHE_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

// The Float32Precision API (backend, op, precision enums) replaces allowTF32CuBLAS/CuDNN; mixing the two
// makes later queries throw, so exactly one of them is used.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 10)
#define YC_FLOAT32_PRECISION_API 1
#else
#define YC_FLOAT32_PRECISION_API 0
#endif

namespace yc::trainer {

bool BuiltWithCuda() { return YOLOCACHE_TORCH_CUDA != 0; }

bool CudaAvailable() {
#if YOLOCACHE_TORCH_CUDA
  try {
    return torch::cuda::is_available();
  } catch (const std::exception&) {
    return false;
  }
#else
  return false;
#endif
}

Result<at::Device> ParseDevice(const std::string& text) {
  std::string s;
  for (char c : text) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s.empty() || s == "auto") return CudaAvailable() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (s == "cpu") return at::Device(at::kCPU);
  int64_t index = 0;
  std::string digits;
  if (s == "cuda") {
    digits = "0";
  } else if (s.rfind("cuda:", 0) == 0) {
    digits = s.substr(5);
  } else {
    digits = s;  // Ultralytics' device=0
  }
  if (digits.empty() || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return Status::InvalidArgument("--device '" + text + "': expected cpu, cuda, cuda:N or N");
  }
  index = std::stoll(digits);
  if (!BuiltWithCuda()) {
    return Status::InvalidArgument("--device '" + text + "': this build's LibTorch has no CUDA support; use --device cpu");
  }
  if (!CudaAvailable()) return Status::InvalidArgument("--device '" + text + "': no CUDA device is available");
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (index >= count) {
    return Status::InvalidArgument("--device '" + text + "': only " + std::to_string(count) + " CUDA device(s)");
  }
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string ConfigureDevice(const at::Device& device, bool cudnn_benchmark) {
  if (!device.is_cuda()) return "cpu";
#if YOLOCACHE_TORCH_CUDA
  c10::cuda::set_device(device.index());
  auto& ctx = at::globalContext();
  ctx.setBenchmarkCuDNN(cudnn_benchmark);
#if YC_FLOAT32_PRECISION_API
  ctx.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, at::Float32Precision::TF32);
  ctx.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::CONV, at::Float32Precision::TF32);
#else
  ctx.setAllowTF32CuBLAS(true);
  ctx.setAllowTF32CuDNN(true);
#endif
  return std::string("cudnn.benchmark ") + (cudnn_benchmark ? "on" : "off") + ", TF32 matmul+conv on";
#else
  return "cpu";
#endif
}

void SynchronizeDevice(const at::Device& device) {
#if YOLOCACHE_TORCH_CUDA
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
#endif
}

double DeviceMemoryReservedBytes(const at::Device& device) {
#if YOLOCACHE_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<double>(stats.reserved_bytes[0].current);  // [0] = aggregate over pools
  }
#endif
  return 0.0;
}

DeviceMemory DeviceMemoryNow(const at::Device& device) {
  DeviceMemory m;
#if YOLOCACHE_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    m.total = static_cast<double>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem);
    m.reserved = static_cast<double>(stats.reserved_bytes[0].current);
    m.allocated = static_cast<double>(stats.allocated_bytes[0].current);
  }
#else
  (void)device;
#endif
  return m;
}

void EmptyDeviceCache(const at::Device& device) {
#if YOLOCACHE_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

std::string DeviceDescription(const at::Device& device) {
#if YOLOCACHE_TORCH_CUDA
  if (device.is_cuda()) {
    const auto* prop = at::cuda::getDeviceProperties(device.index());
    return "cuda:" + std::to_string(device.index()) + " (" + prop->name + ", " +
           std::to_string(prop->totalGlobalMem >> 20) + " MiB)";
  }
#endif
  return "cpu (" + std::to_string(at::get_num_threads()) + " torch threads)";
}

namespace {

#if YOLOCACHE_TORCH_CUDA
// Pinned tensors from LibTorch's host allocator, kept alive by address until the loader frees them.
class PinnedAllocator final : public BufferAllocator {
 public:
  void* Allocate(size_t bytes) override {
    try {
      auto t = at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
      std::lock_guard<std::mutex> lock(mu_);
      void* p = t.data_ptr();
      buffers_.emplace(p, std::move(t));
      return p;
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  void Free(void* ptr, size_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    buffers_.erase(ptr);
  }

 private:
  std::mutex mu_;
  std::map<void*, at::Tensor> buffers_;
};
#endif

}  // namespace

std::shared_ptr<BufferAllocator> MakeBatchAllocator(const at::Device& device) {
#if YOLOCACHE_TORCH_CUDA
  if (device.is_cuda()) return std::make_shared<PinnedAllocator>();
#endif
  return std::make_shared<AlignedAllocator>();
}

Result<int64_t> DeviceFeed::CheckLabels(const Batch& batch, int64_t nc) {
  const size_t rows = batch.label_count();
  std::vector<int64_t> counts(static_cast<size_t>(std::max(batch.size, 0)), 0);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = batch.labels.data() + 6 * r;
    const float bi = row[0], cls = row[1];
    if (!(bi >= 0 && bi < static_cast<float>(batch.size)) || bi != std::floor(bi)) {
      return Status::DataError("batch " + std::to_string(batch.index) + ": label row " + std::to_string(r) +
                               " has batch index " + std::to_string(bi) + " outside [0, " +
                               std::to_string(batch.size) + ")");
    }
    const auto& sample = batch.samples[static_cast<size_t>(bi)];
    if (!(cls >= 0 && cls < static_cast<float>(nc)) || cls != std::floor(cls)) {
      return Status::DataError(Status::At(sample.source, "class " + std::to_string(cls) + " outside the model's [0, " +
                                                             std::to_string(nc) + ")"));
    }
    for (int k = 2; k < 6; ++k) {
      if (!std::isfinite(row[k])) return Status::DataError(Status::At(sample.source, "non-finite box coordinate"));
    }
    ++counts[static_cast<size_t>(bi)];
  }
  int64_t m = 0;
  for (int64_t c : counts) m = std::max(m, c);
  return m;
}

struct DeviceFeed::Impl {
  at::Device device{at::kCPU};
  bool channels_last = false;
  int64_t nc = 0;
  std::deque<DeviceBatch> ready;  // CPU: converted batches

#if YOLOCACHE_TORCH_CUDA
  struct Pending {
    DeviceBatch out;
    at::Tensor images_u8;  // on the device, written by the side stream
    at::Tensor labels_host;  // pinned staging copy (freed through the host allocator, which tracks the copy)
    std::shared_ptr<at::cuda::CUDAEvent> copied;
  };
  struct Retiring {
    std::shared_ptr<at::cuda::CUDAEvent> copied;
    std::shared_ptr<Batch> batch;  // the pinned buffer must not be refilled before its copy ends
  };
  std::deque<Pending> pending;
  std::deque<Retiring> retiring;
  std::optional<c10::cuda::CUDAStream> side;

  // Hands pinned buffers whose copy finished back to the loader; bounds how many can be held.
  void Retire() {
    while (!retiring.empty() && retiring.front().copied->query()) retiring.pop_front();
    while (retiring.size() > 8) {
      retiring.front().copied->synchronize();
      retiring.pop_front();
    }
  }
#endif

  bool UseNhwc() const { return device.is_cuda() && channels_last; }
};

DeviceFeed::DeviceFeed(const at::Device& device, bool channels_last, int64_t nc) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->channels_last = channels_last;
  impl_->nc = nc;
}

DeviceFeed::~DeviceFeed() {
#if YOLOCACHE_TORCH_CUDA
  for (auto& r : impl_->retiring) r.copied->synchronize();
#endif
}

ImageLayout DeviceFeed::layout() const { return impl_->UseNhwc() ? ImageLayout::kNHWC : ImageLayout::kNCHW; }

size_t DeviceFeed::staged() const {
#if YOLOCACHE_TORCH_CUDA
  if (impl_->device.is_cuda()) return impl_->pending.size();
#endif
  return impl_->ready.size();
}

Status DeviceFeed::Stage(std::shared_ptr<Batch> batch) {
  if (!batch) return Status::InvalidArgument("device feed: null batch");
  const bool nhwc = batch->layout == ImageLayout::kNHWC;
  if (nhwc != impl_->UseNhwc()) {
    return Status::InvalidArgument("device feed: batch layout does not match the feed's (set LoaderOptions::layout "
                                   "from DeviceFeed::layout())");
  }
  YC_ASSIGN_OR_RETURN(int64_t max_boxes, CheckLabels(*batch, impl_->nc));
  const int64_t b = batch->size, h = batch->height, w = batch->width;
  const std::vector<int64_t> sizes = nhwc ? std::vector<int64_t>{b, h, w, 3} : std::vector<int64_t>{b, 3, h, w};
  const int64_t nlabels = static_cast<int64_t>(batch->label_count());
  DeviceBatch out;
  out.max_boxes = max_boxes;
  out.size = batch->size;
  out.height = batch->height;
  out.width = batch->width;
  try {
#if YOLOCACHE_TORCH_CUDA
    if (impl_->device.is_cuda()) {
      impl_->Retire();
      if (!impl_->side) impl_->side = c10::cuda::getStreamFromPool(false, impl_->device.index());
      c10::cuda::CUDAStreamGuard guard(*impl_->side);
      auto host = at::from_blob(batch->images, sizes, at::TensorOptions().dtype(at::kByte));
      Impl::Pending p;
      p.images_u8 = at::empty(sizes, at::TensorOptions().dtype(at::kByte).device(impl_->device));
      p.images_u8.copy_(host, /*non_blocking=*/true);
      p.labels_host = at::empty({nlabels, 6}, at::TensorOptions().dtype(at::kFloat).pinned_memory(true));
      if (nlabels > 0) std::memcpy(p.labels_host.data_ptr<float>(), batch->labels.data(), sizeof(float) * 6 * nlabels);
      out.labels = at::empty({nlabels, 6}, at::TensorOptions().dtype(at::kFloat).device(impl_->device));
      out.labels.copy_(p.labels_host, /*non_blocking=*/true);
      p.copied = std::make_shared<at::cuda::CUDAEvent>();
      p.copied->record(*impl_->side);
      out.host = batch;
      p.out = std::move(out);
      impl_->retiring.push_back({p.copied, std::move(batch)});
      impl_->pending.push_back(std::move(p));
      return Status::OK();
    }
#endif
    auto host = at::from_blob(batch->images, sizes, at::TensorOptions().dtype(at::kByte));
    out.images = host.to(impl_->device, at::kFloat).div_(255.0);
    if (nhwc) out.images = out.images.permute({0, 3, 1, 2});
    out.labels = nlabels > 0 ? at::from_blob(batch->labels.data(), {nlabels, 6}, at::kFloat).clone().to(impl_->device)
                             : at::zeros({0, 6}, at::TensorOptions().dtype(at::kFloat).device(impl_->device));
    out.host = std::move(batch);
    impl_->ready.push_back(std::move(out));
  } catch (const std::exception& e) {
    return Status::IOError(std::string("device feed: copying a batch to ") + impl_->device.str() + " failed: " + ExceptionLine(e));
  }
  return Status::OK();
}

Result<DeviceBatch> DeviceFeed::Take() {
#if YOLOCACHE_TORCH_CUDA
  if (impl_->device.is_cuda()) {
    if (impl_->pending.empty()) return Status::InvalidArgument("device feed: Take() with nothing staged");
    Impl::Pending p = std::move(impl_->pending.front());
    impl_->pending.pop_front();
    try {
      auto compute = c10::cuda::getCurrentCUDAStream(impl_->device.index());
      p.copied->block(compute);
      // Allocated on the side stream, used on the compute stream: tell the caching allocator, so the
      // memory is not handed out again before the compute stream is done with it.
      c10::cuda::CUDACachingAllocator::recordStream(p.images_u8.storage().data_ptr(), compute);
      c10::cuda::CUDACachingAllocator::recordStream(p.out.labels.storage().data_ptr(), compute);
      at::Tensor x = impl_->UseNhwc() ? p.images_u8.permute({0, 3, 1, 2}) : p.images_u8;
      // Preserve keeps the NHWC strides: the float tensor is channels_last without a transpose.
      p.out.images = x.to(at::kFloat).div_(255.0);
      impl_->Retire();
      return std::move(p.out);
    } catch (const std::exception& e) {
      return Status::IOError(std::string("device feed: preparing a batch on ") + impl_->device.str() + " failed: " + ExceptionLine(e));
    }
  }
#endif
  if (impl_->ready.empty()) return Status::InvalidArgument("device feed: Take() with nothing staged");
  DeviceBatch out = std::move(impl_->ready.front());
  impl_->ready.pop_front();
  return out;
}

}  // namespace yc::trainer
