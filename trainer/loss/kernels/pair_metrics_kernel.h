// The assigner's pair metrics over (B, M, A) pairs as one CUDA kernel (pair_metrics_kernel.cu): each thread
// reads one box, one predicted box, one anchor and the box's class score at that anchor, and writes the
// three outputs of pair_metric.h. As separate ATen ops the same work reads and writes ~40 (B, M, A) float
// tensors (pair_metrics.h). Plain pointers and a stream handle only: no LibTorch, so nvcc compiles it alone.
#pragma once

#include "trainer/loss/kernels/pair_metric.h"

namespace yc::trainer::kernels {

// Queues the kernel on `stream` (a cudaStream_t). Returns null, or CUDA's message when the launch failed.
const char* LaunchPairMetrics(const PairMetricsArgs& args, void* stream);

// Null when the build holds an image of the kernel the current device can run (YOLOCACHE_CUDA_ARCHITECTURES),
// else CUDA's message.
const char* PairMetricsKernelImageError();

}  // namespace yc::trainer::kernels
