// Detection metrics as Ultralytics reports them during validation (engine/validator.py match_predictions,
// utils/metrics.py ap_per_class / compute_ap / smooth): per-image matching at 10 IoU thresholds
// 0.50:0.05:0.95, per-class AP from the precision envelope sampled at 101 recall points and integrated
// with the trapezoid rule, P and R at the confidence that maximises the smoothed mean F1.
// mAP50 = mean AP at 0.5, mAP50-95 = mean over thresholds; classes absent from the ground truth are not
// averaged. Host-side arithmetic in double, like the numpy original.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/eval/metrics_summary.h"

namespace yc::trainer {

// torch.linspace(0.5, 0.95, 10) in float32, as Ultralytics compares against them.
const std::vector<float>& IouThresholds();

// Ultralytics match_predictions: iou (M labels x N detections), zeroed where classes differ; for each
// threshold, greedy unique matching by IoU. Returns an (N, T) bool tensor on the CPU.
at::Tensor MatchPredictions(const at::Tensor& pred_classes, const at::Tensor& true_classes, const at::Tensor& iou,
                            const std::vector<float>& thresholds = IouThresholds());

// AP of one recall/precision curve (recall non-decreasing): envelope, 101-point interpolation, trapezoid.
// `envelope_at`, when given, receives the precision envelope at `curve_x` (the BoxPR_curve.png values).
double ComputeAP(const std::vector<double>& recall, const std::vector<double>& precision,
                 const std::vector<double>* curve_x = nullptr, std::vector<double>* envelope_at = nullptr);


// Ultralytics smooth(y, f) (ultralytics/utils/metrics.py): box filter of odd width
// round(len * f * 2) // 2 + 1, edges padded with the end values.
std::vector<double> Smooth(const std::vector<double>& y, double f);

// numpy.interp (xp non-decreasing; left/right values outside), exposed for the tests.
double Interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left, double right);

// tp: N x T row-major (1 = true positive at that threshold); conf, pred_cls: N; target_cls: all labels.
ApPerClassResult ApPerClass(const std::vector<uint8_t>& tp, int64_t num_thresholds, const std::vector<float>& conf,
                            const std::vector<int64_t>& pred_cls, const std::vector<int64_t>& target_cls);

// Accumulates validation statistics image by image, then computes the summary.
class DetectionMetrics {
 public:
  // detections: (n, 6) [x1, y1, x2, y2, conf, cls] (NonMaxSuppression output); gt_boxes: (m, 4) xyxy in the
  // same pixel space; gt_cls: (m). Any device; copied to the host.
  void Update(const at::Tensor& detections, const at::Tensor& gt_boxes, const at::Tensor& gt_cls);
  MetricsSummary Compute() const;
  void Reset();

 private:
  std::vector<uint8_t> tp_;  // N x T
  std::vector<float> conf_;
  std::vector<int64_t> pred_cls_;
  std::vector<int64_t> target_cls_;
  std::vector<int64_t> images_per_class_;  // images holding each class id
  int64_t images_ = 0;
};

}  // namespace yc::trainer
