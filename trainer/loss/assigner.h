// TaskAlignedAssigner (TOOD; Ultralytics utils/tal.py): for every ground-truth box pick the top-k anchors
// by alignment metric score^alpha * CIoU^beta among anchors whose centre lies inside the box, resolve
// anchors claimed by several boxes to the box of highest overlap, and build soft one-hot class targets
// scaled by the normalised alignment.
//
// Dense formulation over (batch, max_boxes, anchors) with masks multiplied in, so it runs without host
// syncs on any device (Ultralytics gathers masked pairs, which needs a nonzero() sync). Values equal
// Ultralytics' for every pair it computes; pairs it skips are zero here too. On CUDA the same steps run in
// kernels of our own where the build has them (assigner_kernels.h), with the same results.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace yc::trainer {

struct AssignerOptions {
  int64_t topk = 10;
  int64_t num_classes = 80;
  double alpha = 0.5;
  double beta = 6.0;
  double eps = 1e-9;
  // On CUDA, kernels of our own where the build has them (assigner_kernels.h); false: ATen ops everywhere.
  bool cuda_kernels = true;
};

struct Assignment {
  at::Tensor target_labels;  // (B, A) int64, class of the assigned box (0 where background)
  at::Tensor target_bboxes;  // (B, A, 4) xyxy, same units as gt_bboxes
  at::Tensor target_scores;  // (B, A, C) float, soft one-hot, zero for background
  at::Tensor fg_mask;        // (B, A) bool
  at::Tensor target_gt_idx;  // (B, A) int64, index into the image's boxes
};

class TaskAlignedAssigner {
 public:
  explicit TaskAlignedAssigner(AssignerOptions options = {}) : options_(options) {}

  // pd_scores (B, A, C) sigmoid scores; pd_bboxes (B, A, 4) xyxy; anc_points (A, 2), all in pixels;
  // gt_labels (B, M, 1); gt_bboxes (B, M, 4) xyxy pixels; mask_gt (B, M, 1) marks real (non-pad) rows.
  // Runs without autograd. M may be 0 (all background).
  Assignment operator()(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                        const at::Tensor& gt_labels, const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const;

  const AssignerOptions& options() const { return options_; }

 private:
  AssignerOptions options_;
};

}  // namespace yc::trainer
