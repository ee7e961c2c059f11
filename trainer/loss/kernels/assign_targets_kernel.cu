#include "trainer/loss/kernels/assign_targets_kernel.h"

#include <initializer_list>

#include <cuda_runtime.h>

namespace yc::trainer::kernels {
namespace {

constexpr int kThreads = 256;

// Calls body(i) for every i in [0, n), spread over the grid by a grid-stride loop, so that any batch fits
// one launch.
template <typename Body>
__device__ void ForEachIndex(int64_t n, Body body) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    body(i);
  }
}

__global__ void MarkPicksKernel(AssignTargetsArgs t) {
  ForEachIndex(t.batch * t.boxes * t.topk, [&](int64_t i) {
    const int64_t row = i / t.topk;
    MarkPick(t, row / t.boxes, row % t.boxes, i % t.topk);
  });
}

__global__ void ChooseBoxesKernel(AssignTargetsArgs t) {
  ForEachIndex(t.batch * t.anchors, [&](int64_t i) { ChooseBox(t, i / t.anchors, i % t.anchors); });
}

__global__ void WriteScoresKernel(AssignTargetsArgs t) {
  ForEachIndex(t.batch * t.anchors * t.classes, [&](int64_t i) {
    const int64_t ba = i / t.classes;
    WriteScore(t, ba / t.anchors, ba % t.anchors, i % t.classes);
  });
}

unsigned Blocks(int64_t n) {
  constexpr int64_t kMaxBlocks = 1 << 20;  // the grid-stride loops cover the rest
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

}  // namespace

const char* AssignTargetsKernelsImageError() {
  cudaFuncAttributes attributes;
  for (const void* kernel : {reinterpret_cast<const void*>(MarkPicksKernel),
                             reinterpret_cast<const void*>(ChooseBoxesKernel),
                             reinterpret_cast<const void*>(WriteScoresKernel)}) {
    const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
    if (status != cudaSuccess) return cudaGetErrorString(status);
  }
  return nullptr;
}

const char* LaunchAssignTargets(const AssignTargetsArgs& args, void* stream) {
  if (args.batch == 0 || args.anchors == 0) return nullptr;
  const auto s = static_cast<cudaStream_t>(stream);
  if (args.boxes > 0 && args.topk > 0) {
    MarkPicksKernel<<<Blocks(args.batch * args.boxes * args.topk), kThreads, 0, s>>>(args);
  }
  ChooseBoxesKernel<<<Blocks(args.batch * args.anchors), kThreads, 0, s>>>(args);
  if (args.classes > 0) WriteScoresKernel<<<Blocks(args.batch * args.anchors * args.classes), kThreads, 0, s>>>(args);
  const cudaError_t status = cudaGetLastError();
  return status == cudaSuccess ? nullptr : cudaGetErrorString(status);
}

}  // namespace yc::trainer::kernels
