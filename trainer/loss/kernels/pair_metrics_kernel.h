// The assigner's pair metrics over (B, M, A) pairs as one CUDA kernel (pair_metrics_kernel.cu): each thread
// reads one box, one predicted box, one anchor and the box's class score at that anchor, and writes the
// three outputs of pair_metric.h. As separate ATen ops the same work reads and writes ~40 (B, M, A) float
// tensors (pair_metrics.h). Plain pointers and a stream handle only: no LibTorch, so nvcc compiles it alone.
#pragma once

#include <cstdint>

#include "trainer/loss/kernels/pair_metric.h"

namespace yc::trainer::kernels {

struct PairMetricsArgs {
  int64_t batch = 0, boxes = 0, anchors = 0, classes = 0;
  const float* gt_boxes = nullptr;   // (B, M, 4) xyxy, contiguous
  const bool* real_box = nullptr;    // (B, M): false for pad rows
  const int64_t* labels = nullptr;   // (B, M) class of each box, in [0, classes)
  const float* pd_boxes = nullptr;   // (B, A, 4) xyxy, contiguous, same units as gt_boxes
  const float* pd_scores = nullptr;  // (B, A, classes) sigmoid scores, contiguous
  const float* anchor_points = nullptr;  // (A, 2) anchor centres, contiguous
  PairMetricParams params{};
  bool* inside = nullptr;            // (B, M, A) outputs
  float* overlaps = nullptr;
  float* align = nullptr;
};

// Queues the kernel on `stream` (a cudaStream_t). Returns null, or CUDA's message when the launch failed.
const char* LaunchPairMetrics(const PairMetricsArgs& args, void* stream);

// Null when the build holds an image of the kernel the current device can run (YOLOCACHE_CUDA_ARCHITECTURES),
// else CUDA's message.
const char* PairMetricsKernelImageError();

}  // namespace yc::trainer::kernels
