#include "trainer/loss/kernels/pair_metrics_kernel.h"

#include <cuda_runtime.h>

namespace yc::trainer::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxRowsPerLaunch = 65535;  // gridDim.y's limit; more rows loop in the kernel

// blockIdx.y walks the (b, m) rows, x the anchors: a block's threads share one box and read consecutive
// predicted boxes and anchors. The class score is a strided read, pd_scores[b, a, label]; the rows of one
// image reuse the same (A, classes) slice, which stays in L2.
__global__ void PairMetricsKernel(PairMetricsArgs args) {
  const int64_t a = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= args.anchors) return;
  const int64_t rows = args.batch * args.boxes;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) WritePairMetric(args, row, a);
}

}  // namespace

const char* PairMetricsKernelImageError() {
  cudaFuncAttributes attributes;
  const cudaError_t status = cudaFuncGetAttributes(&attributes, PairMetricsKernel);
  return status == cudaSuccess ? nullptr : cudaGetErrorString(status);
}

const char* LaunchPairMetrics(const PairMetricsArgs& args, void* stream) {
  const int64_t rows = args.batch * args.boxes;
  if (rows == 0 || args.anchors == 0) return nullptr;
  const dim3 grid(static_cast<unsigned>((args.anchors + kThreads - 1) / kThreads),
                  static_cast<unsigned>(rows < kMaxRowsPerLaunch ? rows : kMaxRowsPerLaunch));
  PairMetricsKernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  const cudaError_t status = cudaGetLastError();
  return status == cudaSuccess ? nullptr : cudaGetErrorString(status);
}

}  // namespace yc::trainer::kernels
