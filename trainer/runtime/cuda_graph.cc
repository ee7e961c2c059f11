#include "trainer/runtime/cuda_graph.h"

#include <exception>
#include <string>
#include <utility>

#include "trainer/runtime/exception_text.h"

#ifndef YOLOCACHE_TORCH_CUDA
#define YOLOCACHE_TORCH_CUDA 0
#endif
#if YOLOCACHE_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>

#include "trainer/runtime/dedicated_stream.h"
#endif

namespace yc::trainer {

bool CudaGraphsBuilt() { return YOLOCACHE_TORCH_CUDA != 0; }

#if YOLOCACHE_TORCH_CUDA

struct GraphMemoryPool::Impl {
  decltype(at::cuda::graph_pool_handle()) id = at::cuda::graph_pool_handle();
};

struct CudaGraph::Impl {
  std::unique_ptr<at::cuda::CUDAGraph> graph;
};

Status CudaGraph::Capture(int device_index, GraphMemoryPool& pool, const std::function<Status()>& body) {
  impl_->graph.reset();
  const auto device = device_index >= 0 ? static_cast<c10::DeviceIndex>(device_index) : c10::cuda::current_device();
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device);
  // Not a pool stream: another thread (a validation beside training) may be queuing work on that one.
  const c10::cuda::CUDAStream side = DedicatedCudaStream(device, DedicatedStreamUse::kGraphCapture);
  at::cuda::CUDAEvent inputs_ready;
  inputs_ready.record(current);
  inputs_ready.block(side);
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  Status status;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    try {
#if TORCH_VERSION_MAJOR >= 2
      graph->capture_begin(pool.impl_->id, cudaStreamCaptureModeThreadLocal);
#else
      graph->capture_begin(pool.impl_->id);  // 1.13 captures in global mode only
#endif
    } catch (const std::exception& e) {
      return Status::Unsupported("CUDA graph capture did not start: " + ExceptionLine(e));
    }
    try {
      status = body();
    } catch (const std::exception& e) {
      status = Status::Unsupported(ExceptionLine(e));
    }
    try {
      graph->capture_end();  // ends the capture even after a failure, so the stream is usable again
    } catch (const std::exception& e) {
      if (status.ok()) status = Status::Unsupported(ExceptionLine(e));
    }
  }
  at::cuda::CUDAEvent recorded;
  recorded.record(side);
  recorded.block(current);
  if (!status.ok()) return status;
  impl_->graph = std::move(graph);
  return Status::OK();
}

void CudaGraph::Replay() { impl_->graph->replay(); }

#else

struct GraphMemoryPool::Impl {};
struct CudaGraph::Impl {};

Status CudaGraph::Capture(int, GraphMemoryPool&, const std::function<Status()>&) {
  return Status::Unsupported("CUDA graphs need a LibTorch built with CUDA");
}

void CudaGraph::Replay() {}

#endif

GraphMemoryPool::GraphMemoryPool() : impl_(std::make_unique<Impl>()) {}
GraphMemoryPool::~GraphMemoryPool() = default;

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) {}
CudaGraph::~CudaGraph() = default;

bool CudaGraph::captured() const {
#if YOLOCACHE_TORCH_CUDA
  return impl_->graph != nullptr;
#else
  return false;
#endif
}

}  // namespace yc::trainer
