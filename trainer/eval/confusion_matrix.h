// The detection confusion matrix as Ultralytics' ConfusionMatrix.process_batch builds it during
// validation (utils/metrics.py): (nc + 1) x (nc + 1) counts, rows = predicted class, columns = true
// class, the last row/column = background. Detections below `conf` are dropped (0.25 when the validator's
// conf is its default 0.001), then each label is matched to at most one detection with IoU > 0.45
// (highest IoU first, unique per detection and per label); unmatched labels count as background
// (missed), unmatched detections as background false positives.
//
//   ConfusionMatrix cm(nc);
//   for each image: cm.Update(detections, gt_boxes, gt_cls);   // same pixel space for both
//   cm.counts()[p * (nc + 1) + t]
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace yc::trainer {

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t nc, double conf = 0.25, double iou = 0.45);

  // detections: (n, 6) [x1, y1, x2, y2, conf, cls]; gt_boxes (m, 4) xyxy; gt_cls (m). Any device.
  void Update(const at::Tensor& detections, const at::Tensor& gt_boxes, const at::Tensor& gt_cls);

  int64_t nc() const { return nc_; }
  // Row-major (nc + 1) x (nc + 1): [predicted][true].
  const std::vector<double>& counts() const { return counts_; }
  double at(int64_t predicted, int64_t truth) const { return counts_[static_cast<size_t>(predicted * (nc_ + 1) + truth)]; }

 private:
  void Add(int64_t predicted, int64_t truth);
  int64_t nc_;
  double conf_, iou_;
  std::vector<double> counts_;
};

// The confidence Ultralytics' confusion matrix uses for a validator run at `val_conf`.
double ConfusionMatrixConf(double val_conf);

}  // namespace yc::trainer
