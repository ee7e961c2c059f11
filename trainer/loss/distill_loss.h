// Knowledge distillation on the Detect head's raw outputs (train --teacher; docs/TRAINER.md,
// "Distillation"): the student's per-level outputs (B, 4 * reg_max + nc, H_i, W_i) against a teacher's
// of the same layout on the same batch, anchor for anchor.
//
// Per anchor a (teacher logits t, student logits s; sigma the logistic function):
//   cls_a = sum_c KL(Bernoulli(sigma(t_ac)) || Bernoulli(sigma(s_ac)))   (YOLOv8's classes are independent
//           sigmoids, so the soft-target BCE is the natural KD form; minus the teacher's entropy, which
//           carries no gradient, it is this KL: zero when the student matches)
//   box_a = T^2 * mean over the 4 sides of KL(softmax(t_side / T) || softmax(s_side / T))   (the DFL bins;
//           Hinton et al. 2015's temperature and T^2 gradient scale)
//   w_a   = max_c sigma(t_ac)   (the teacher's confidence, detached: background anchors do not dominate)
//   kd    = sum_a w_a * (cls_a + box_a) / max(sum_a w_a, 1)
// The caller scales kd by its weight and, as the detection loss, by the batch size for backward.
//
// Runs in fp32 whatever the heads' dtype (autocast-safe), makes no host syncs (CUDA-graph safe), and
// no gradient reaches the teacher's tensors (they are detached).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"

namespace yc::trainer {

class StatsReducer;

struct DistillOptions {
  int64_t nc = 80;
  int64_t reg_max = 16;
  double temperature = 2.0;  // of the DFL bin distributions
};

class DistillLoss {
 public:
  explicit DistillLoss(DistillOptions options) : options_(options) {}

  // The unweighted kd term (a scalar, with gradient towards `student`). InvalidArgument when the two
  // outputs do not pair up level for level (count, shape) or do not have nc + 4 * reg_max channels.
  Result<at::Tensor> operator()(const std::vector<at::Tensor>& student, const std::vector<at::Tensor>& teacher) const;

  const DistillOptions& options() const { return options_; }

  // Data-parallel with --sync-bn: the weight sum of the global batch (DetectionLoss::set_global_normaliser);
  // the term is then scaled by the world size as the detection items are.
  void set_global_normaliser(std::shared_ptr<StatsReducer> reducer) { global_ = std::move(reducer); }

 private:
  DistillOptions options_;
  std::shared_ptr<StatsReducer> global_;
};

}  // namespace yc::trainer
