// YOLOv8 detection loss (Ultralytics v8DetectionLoss): TaskAlignedAssigner targets, BCE-with-logits
// class loss over all anchors normalised by the sum of target scores, CIoU box loss and Distribution
// Focal Loss on foreground anchors weighted by their target score; gains box 7.5, cls 0.5, dfl 1.5.
//
// Runs in fp32 whatever the head's dtype (autocast-safe) and makes no host syncs: the per-batch maximum
// number of boxes per image (the padding width) must be known up front, computed on the host from the
// label table before it is uploaded (MaxBoxesPerImage). Foreground selection is done with masks
// multiplied in rather than boolean indexing, which gives the same values as Ultralytics without the
// nonzero() sync.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"
#include "trainer/loss/assigner.h"

namespace yc::trainer {

class StatsReducer;

struct LossOptions {
  double box_gain = 7.5;
  double cls_gain = 0.5;
  double dfl_gain = 1.5;
  int64_t topk = 10;
  double alpha = 0.5;
  double beta = 6.0;
  int64_t reg_max = 16;
  bool assigner_kernels = true;  // AssignerOptions::cuda_kernels (--assigner-kernel)
};

// Told when the assigner starts and ends inside a loss computation, so that a profile of the step
// (`ceiling --profile`, trainer/engine/step_profile.h) times it apart from the loss terms around it.
struct AssignerMarks {
  std::function<void()> starts;
  std::function<void()> ends;
};

struct LossOutput {
  at::Tensor total;  // scalar: (box + cls + dfl) * batch_size — call backward() on this (Ultralytics scale)
  at::Tensor items;  // (3,) detached [box, cls, dfl] (gains applied, not multiplied by batch size) for logging
};

// Largest number of label rows sharing one batch index in an (N, 6) label table [batch_idx, cls, cx, cy,
// w, h]. Reads the table on the host: call it on the CPU copy before uploading. Rows whose batch index
// falls outside [0, batch_size), or (when nc > 0) whose class falls outside [0, nc), are rejected.
Result<int64_t> MaxBoxesPerImage(const at::Tensor& labels_cpu, int64_t batch_size, int64_t nc = -1);

// Ultralytics v8DetectionLoss.preprocess: (N, 6) normalised label table -> (B, max_boxes, 5) rows of
// [cls, x1, y1, x2, y2] in pixels (image size (h, w)), zero-padded. Sync-free; rows of one image keep
// their order. max_boxes must be >= the true maximum (MaxBoxesPerImage).
at::Tensor PreprocessTargets(const at::Tensor& labels, int64_t batch_size, int64_t max_boxes, double img_h,
                             double img_w);

// Distribution Focal Loss: pred_dist (..., reg_max) logits, target (...) continuous bin positions in
// [0, reg_max - 1). Returns (...) cross-entropy against the two neighbouring bins, linearly weighted.
at::Tensor DistributionFocalLoss(const at::Tensor& pred_dist, const at::Tensor& target);

class DetectionLoss {
 public:
  // nc classes, strides of the feature levels (8, 16, 32 for YOLOv8).
  DetectionLoss(int64_t nc, std::vector<double> strides, LossOptions options = {});

  // feats: the model's train-mode outputs (B, 4 * reg_max + nc, H_i, W_i); labels: (N, 6) float table
  // [batch_idx, cls, cx, cy, w, h] (normalised xywh) on the feats' device; max_boxes: see
  // MaxBoxesPerImage. The image size is feats[0]'s grid times the first stride, as in Ultralytics.
  // Shapes are checked on the host (no sync); a mismatch is an InvalidArgument, not a throw. `marks`, when
  // given, is told when the assigner starts and ends.
  Result<LossOutput> operator()(const std::vector<at::Tensor>& feats, const at::Tensor& labels, int64_t max_boxes,
                                const AssignerMarks* marks = nullptr) const;
  // The same from targets already in PreprocessTargets' form, (B, M, 5) [cls, x1, y1, x2, y2] in pixels
  // with all-zero pad rows, on the feats' device: what a captured step keeps in a static buffer, padded to
  // a box-count bucket (box_buckets.h).
  Result<LossOutput> FromTargets(const std::vector<at::Tensor>& feats, const at::Tensor& targets,
                                 const AssignerMarks* marks = nullptr) const;

  const LossOptions& options() const { return options_; }

  // Data-parallel (--sync-bn): normalise by the target-score sum of the global batch (summed across ranks)
  // instead of this rank's, and scale this rank's items by the world size, so that the ranks' average
  // (what the gradient all-reduce computes, with the trainer's x world_size) is the one-process loss of
  // the global batch. Ultralytics normalises per rank (the default, null).
  void set_global_normaliser(std::shared_ptr<StatsReducer> reducer) { global_ = std::move(reducer); }

 private:
  int64_t nc_;
  std::vector<double> strides_;
  LossOptions options_;
  TaskAlignedAssigner assigner_;

  Status CheckFeats(const std::vector<at::Tensor>& feats) const;
  LossOutput Compute(const std::vector<at::Tensor>& feats, const at::Tensor& targets, const AssignerMarks* marks) const;
  std::shared_ptr<StatsReducer> global_;
};

}  // namespace yc::trainer
