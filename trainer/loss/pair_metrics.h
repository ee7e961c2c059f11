// The assigner's work per (box, anchor) pair, in one pass: whether the anchor's centre lies inside the
// box, the CIoU of the box with the anchor's predicted box, and the alignment metric
// score^alpha * CIoU^beta (TOOD; Ultralytics utils/tal.py, get_box_metrics). Over (B, M, A) pairs this is
// the step's largest elementwise work: at batch 64, 8400 anchors and 64 box rows it is 34 M pairs, and
// as ~40 separate ATen kernels each reading and writing a (B, M, A) float tensor it moves ~15 GB a step.
//
// Two implementations with the same results:
// - ComputePairMetrics: plain ATen ops over views of the box sides (no (B, M, A, 4) expansion), equal to
//   box_ops.h's BboxIoU and to Ultralytics' in-box test (select_candidates_in_gts) to the bit
//   (tests/trainer/loss_test.cc, PairMetrics.*). Any device. A TorchScript version fused by NNC was tried
//   (2026-12-04, one H200): LibTorch 2.11's fuser compiled it per shape at seconds each and did not fuse it
//   with dynamic shapes at all.
// - ComputePairMetricsKernel (assigner_kernels.h): one CUDA kernel of our own, which reads the boxes once
//   and writes the three outputs once; equal to the ATen ops within CUDA's atan and pow rounding. The
//   assigner takes it where it applies (--assigner-kernel auto).
#pragma once

#include <ATen/ATen.h>

namespace yc::trainer {

struct PairMetrics {
  at::Tensor mask;          // (B, M, A) bool: anchor centre inside the box (edge distance > eps), real row
  at::Tensor overlaps;      // (B, M, A) float: CIoU clamped at 0 where `mask`, else 0
  at::Tensor align_metric;  // (B, M, A) float: score^alpha * overlaps^beta where `mask`, else 0
};

// gt_bboxes (B, M, 4) and pd_bboxes (B, A, 4) xyxy, anc_points (A, 2), all in the same units; valid_gt
// (B, M, 1) bool marks real rows; box_scores (B, M, A) the predicted score of each box's class at each
// anchor; `inside_eps` the in-box margin (an anchor centre's least distance to an edge must exceed it) (the CIoU's own eps is BboxIoU's 1e-7). Runs
// without autograd.
PairMetrics ComputePairMetrics(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                               const at::Tensor& valid_gt, const at::Tensor& box_scores, double alpha, double beta,
                               double inside_eps);

}  // namespace yc::trainer
