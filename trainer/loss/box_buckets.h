// Box-count buckets: the padding width of a batch's targets when the training step is captured once and
// replayed (a CUDA graph needs static shapes). A batch's largest per-image box count is rounded up to the
// next width of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (powers of two and one and a half times them), so a run
// meets a handful of widths instead of one per count, and pads at most a third of the rows: the assigner's
// work grows with the width (B x width x anchors pairs), so coarser powers of two cost up to twice. Padded rows
// are all zero and the loss masks them out (mask_gt), so a padded batch has the same loss and gradients as
// the unpadded one (tests/trainer/loss_test.cc, BoxBuckets.*). A batch without boxes gets one padded row:
// same loss as none, and no separate empty-batch path to capture.
// The eager loss pads to the same widths (DetectionLoss::operator()), so that an eager step works on the
// shapes a captured one would, and the caching allocator meets a handful of sizes rather than one per count.
//
//   const int64_t width = BoxCountBucket(max_boxes);                     // 13 -> 16, 17 -> 24
//   at::Tensor targets = PreprocessTargets(labels_cpu, batch, width, h, w);  // (B, 16, 5), on the host
//   loss.FromTargets(feats, static_targets.copy_(targets, true));
#pragma once

#include <cstdint>

namespace yc::trainer {

// The smallest of 1, 2, 3, 4, 6, 8, 12, ... (2^k and 3 * 2^(k-1)) that is >= max(max_boxes, 1).
inline int64_t BoxCountBucket(int64_t max_boxes) {
  int64_t width = 1;
  while (width < max_boxes) {
    if (width >= 2 && width * 3 / 2 >= max_boxes) return width * 3 / 2;
    width *= 2;
  }
  return width;
}

}  // namespace yc::trainer
