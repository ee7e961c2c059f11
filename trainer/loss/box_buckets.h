// Box-count buckets: the padding width of a batch's targets when the training step is captured once and
// replayed (a CUDA graph needs static shapes). A batch's largest per-image box count is rounded up to a
// power of two, so a run meets a handful of widths (1, 2, 4, ... 512) instead of one per count. Padded rows
// are all zero and the loss masks them out (mask_gt), so a padded batch has the same loss and gradients as
// the unpadded one (tests/trainer/loss_test.cc, BoxBuckets.*). A batch without boxes gets one padded row:
// same loss as none, and no separate empty-batch path to capture.
//
//   const int64_t width = BoxCountBucket(max_boxes);                     // 13 -> 16
//   at::Tensor targets = PreprocessTargets(labels_cpu, batch, width, h, w);  // (B, 16, 5), on the host
//   loss.FromTargets(feats, static_targets.copy_(targets, true));
#pragma once

#include <cstdint>

namespace yc::trainer {

// The smallest power of two >= max(max_boxes, 1).
inline int64_t BoxCountBucket(int64_t max_boxes) {
  int64_t width = 1;
  while (width < max_boxes) width *= 2;
  return width;
}

}  // namespace yc::trainer
