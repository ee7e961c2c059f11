// Non-maximum suppression as Ultralytics' non_max_suppression (validation settings by default):
// candidates above conf, multi-label (box, class) pairs, at most max_nms by score, classes kept apart
// with the class-offset trick (boxes shifted by cls * max_wh), greedy IoU suppression, at most max_det.
//
// Candidate filtering, sorting and the pairwise IoU work run as tensor ops on the predictions' device.
// The greedy pass is inherently sequential: on CPU it is a plain loop; on other devices the
// IoU > threshold relation is computed on the device in row blocks, bit-packed, and scanned on the
// host (torchvision's CUDA NMS does the same), stopping as soon as max_det boxes are kept. Off the CPU,
// whole batches go through NonMaxSuppressionBatched (one sync per round instead of several per image).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace yc::trainer {

struct NmsOptions {
  double conf = 0.001;   // candidate threshold (0.25 for prediction)
  double iou = 0.7;      // suppression threshold
  int64_t max_det = 300;
  int64_t max_nms = 30000;
  bool multi_label = true;
  bool agnostic = false;  // ignore classes (single_cls, agnostic_nms)
  double max_wh = 7680.0;  // class offset
  // Ultralytics' `classes`: keep only candidates of these classes (empty: all). As its
  // non_max_suppression, the filter runs on the (box, class) candidates, after the best class of a box is
  // chosen (multi_label off) and before max_nms and the suppression.
  std::vector<int64_t> classes;
  // The prediction is final detections (B, max_det, 6) from an nms=True export (Ultralytics' end2end,
  // which its AutoBackend reads from the metadata's args.nms): only rows with conf above `conf`, the
  // class filter and the first max_det are kept, as its non_max_suppression does for end2end models.
  bool end2end = false;
};

// The rows of `klass` (class ids as integers or floats, any shape (n) or (n, 1)) whose class is one of
// `classes`, as a bool (n) mask on its device; all true when `classes` is empty.
at::Tensor ClassFilterMask(const at::Tensor& klass, const std::vector<int64_t>& classes);

// prediction: (B, 4 + nc, A) from YOLOv8 eval mode (xywh pixels + class scores), or with `end2end` the
// (B, max_det, 6) rows of an nms export. Returns per image an
// (n, 6) float tensor [x1, y1, x2, y2, conf, cls] on the same device, sorted by descending conf.
// Anything that is not a (B, 4 + nc, A) tensor yields an empty vector. No time limit (Ultralytics aborts
// after 2 s + 0.05 s/image); the max_det early exit bounds the work instead.
std::vector<at::Tensor> NonMaxSuppression(const at::Tensor& prediction, const NmsOptions& options = {});

// The same detections (same boxes, same order) for the whole batch at once, with a handful of host syncs
// instead of several per image (nms_batched.cc): candidates of all images are found, sorted and capped
// together, and the greedy pass runs in rounds of `chunk` candidates per image, each round one device
// IoU pass over all unfinished images and one host read. NonMaxSuppression uses it off the CPU.
std::vector<at::Tensor> NonMaxSuppressionBatched(const at::Tensor& prediction, const NmsOptions& options = {},
                                                 int64_t chunk = 512);

// Greedy NMS of xyxy boxes (N, 4) with scores (N): indices (int64, on the boxes' device) of kept boxes in
// descending score order (ties keep input order), at most max_keep (< 0: no limit).
at::Tensor Nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold, int64_t max_keep = -1);

// The two greedy back-ends behind Nms, exposed so tests can check they agree. Both take boxes already
// sorted by descending score and return kept positions in that order.
at::Tensor NmsSortedLoop(const at::Tensor& sorted_boxes, double iou_threshold, int64_t max_keep);
at::Tensor NmsSortedBitmask(const at::Tensor& sorted_boxes, double iou_threshold, int64_t max_keep,
                            int64_t block_rows = 2048);

}  // namespace yc::trainer
