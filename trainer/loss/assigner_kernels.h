// The task-aligned assigner on CUDA in kernels of our own (kernels/): the pair metrics in one kernel
// (kernels/pair_metrics_kernel.cu) and the steps after the top-k in three (kernels/assign_targets_kernel.cu),
// where the dense ATen version (assigner.cc, pair_metrics.h) reads and writes some sixty (B, M, A) tensors
// per batch. Compiled where CMake finds nvcc beside a CUDA LibTorch (cmake/YolocacheCudaKernels.cmake);
// elsewhere AssignerKernelsApply is false and the ATen version runs. The results equal the ATen version's:
// masks and indices exactly, values within CUDA's rounding of atan and pow (tests/trainer/loss_test.cc).
// Everything is queued on the current stream without a host sync, so a CUDA graph captures it.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/loss/assigner.h"
#include "trainer/loss/kernels/assign_targets.h"
#include "trainer/loss/kernels/pair_metric.h"
#include "trainer/loss/pair_metrics.h"

namespace yc::trainer {

// A kernel's arguments over tensors, on any device: the inputs made contiguous (no copy where they are),
// the outputs and the zeroed scratch allocated beside them; the tensors keep `args`' pointers valid. The
// CUDA functions below launch the kernels on them; on CPU tensors tests/trainer/loss_test.cc runs the same
// per-thread steps (kernels/) as loops.
struct PairMetricsCall {
  kernels::PairMetricsArgs args;
  std::vector<at::Tensor> inputs;
  PairMetrics out;
};
PairMetricsCall PreparePairMetrics(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes,
                                   const at::Tensor& anc_points, const at::Tensor& valid_gt,
                                   const at::Tensor& pd_scores, const at::Tensor& labels, double alpha, double beta,
                                   double inside_eps);

struct AssignTargetsCall {
  kernels::AssignTargetsArgs args;
  std::vector<at::Tensor> inputs;
  at::Tensor picks, picked_by, best;  // scratch: picks per anchor, the row that picked it, best alignment / overlap
  Assignment out;
};
AssignTargetsCall PrepareAssignTargets(const PairMetrics& pairs, const at::Tensor& topk_idxs, const at::Tensor& labels,
                                       const at::Tensor& gt_bboxes, int64_t num_classes, double eps);

// Whether the kernels can run on these scores: this build compiled them, and they are float32 on CUDA.
bool AssignerKernelsApply(const at::Tensor& pd_scores);

// ComputePairMetrics in one kernel, with each box's class score read at its label from pd_scores (B, A, C)
// instead of from a gathered (B, M, A) tensor; labels (B, M) int64 in [0, C).
PairMetrics ComputePairMetricsKernel(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes,
                                     const at::Tensor& anc_points, const at::Tensor& valid_gt,
                                     const at::Tensor& pd_scores, const at::Tensor& labels, double alpha, double beta,
                                     double inside_eps);

// The assignment from the pair metrics and each box row's top-k anchors (B, M, k) by alignment: the
// anchors picked inside their box, resolved to the box of highest overlap, and their targets. labels (B, M)
// int64, gt_bboxes (B, M, 4) with M >= 1; `eps` the normalisation's.
Assignment AssignTargetsKernel(const PairMetrics& pairs, const at::Tensor& topk_idxs, const at::Tensor& labels,
                               const at::Tensor& gt_bboxes, int64_t num_classes, double eps);

}  // namespace yc::trainer
