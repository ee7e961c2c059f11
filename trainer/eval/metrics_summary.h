// The results of validation metrics as plain numbers (no torch), for the console, JSON and the plots:
// per-class P, R, F1 and AP at each IoU threshold, the curves Ultralytics plots, and the summary.
#pragma once

#include <cstdint>
#include <vector>

namespace yc::trainer {

// np.linspace(0, 1, 1000): the x axis of Ultralytics' PR, F1, P and R curves.
const std::vector<double>& CurveX();

struct ApPerClassResult {
  std::vector<int64_t> classes;          // unique ground-truth classes, ascending
  std::vector<int64_t> num_targets;      // ground-truth count per class
  std::vector<double> p, r, f1;          // per class at the best-F1 confidence
  std::vector<std::vector<double>> ap;   // per class, per IoU threshold
  // Curves for the validation plots, per class over CurveX(): precision over recall at IoU 0.5
  // (BoxPR_curve.png), and F1 / precision / recall over confidence (BoxF1_curve.png, BoxP_, BoxR_).
  std::vector<std::vector<double>> pr_curve, f1_curve, p_curve, r_curve;
};

struct MetricsSummary {
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
  double fitness = 0;  // 0.1 * mAP50 + 0.9 * mAP50-95 (Ultralytics 8.0-8.3.2xx best.pt selection)
  ApPerClassResult per_class;
  int64_t images = 0;
  int64_t instances = 0;
  // By class id (as long as the largest id seen + 1): labels of that class, and images holding at least
  // one (Ultralytics' nt_per_class and nt_per_image, ultralytics/utils/metrics.py DetMetrics). Counted
  // even when nothing was detected.
  std::vector<int64_t> instances_per_class, images_per_class;
};

}  // namespace yc::trainer
