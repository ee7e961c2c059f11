#include "trainer/eval/confusion_matrix.h"

#include <algorithm>
#include <cmath>

#include "trainer/model/box_ops.h"

namespace yc::trainer {

ConfusionMatrix::ConfusionMatrix(int64_t nc, double conf, double iou)
    : nc_(nc), conf_(conf), iou_(iou), counts_(static_cast<size_t>((nc + 1) * (nc + 1)), 0.0) {}

double ConfusionMatrixConf(double val_conf) {
  // Ultralytics replaces the validator's default 0.001 (which would fill the matrix with noise) by 0.25.
  return std::abs(val_conf - 0.001) < 1e-12 ? 0.25 : val_conf;
}

void ConfusionMatrix::Add(int64_t predicted, int64_t truth) {
  // Classes outside the model's range are counted as background rather than indexing out of bounds.
  if (predicted < 0 || predicted > nc_) predicted = nc_;
  if (truth < 0 || truth > nc_) truth = nc_;
  counts_[static_cast<size_t>(predicted * (nc_ + 1) + truth)] += 1;
}

void ConfusionMatrix::Update(const at::Tensor& detections, const at::Tensor& gt_boxes, const at::Tensor& gt_cls) {
  std::vector<int64_t> gt;
  if (gt_cls.defined() && gt_cls.numel() > 0) {
    auto c = gt_cls.to(at::kCPU).to(at::kLong).reshape({-1}).contiguous();
    gt.assign(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  }
  // Detections above the confidence threshold.
  std::vector<int64_t> det_cls;
  at::Tensor det_boxes;
  if (detections.defined() && detections.dim() == 2 && detections.size(0) > 0) {
    auto d = detections.to(at::kCPU).to(at::kFloat).contiguous();
    auto keep = d.select(1, 4) > static_cast<float>(conf_);
    auto kept = d.index({keep});
    det_boxes = kept.narrow(1, 0, 4).contiguous();
    const auto cls = kept.select(1, 5).contiguous();
    const float* c = cls.data_ptr<float>();  // read in place: an item() per detection cost microseconds each
    for (int64_t i = 0; i < cls.size(0); ++i) det_cls.push_back(static_cast<int64_t>(c[i]));
  }
  if (gt.empty()) {
    for (int64_t dc : det_cls) Add(dc, nc_);  // false positives
    return;
  }
  if (!detections.defined() || detections.dim() != 2 || detections.size(0) == 0) {
    for (int64_t gc : gt) Add(nc_, gc);  // missed
    return;
  }
  struct Match {
    int64_t label, det;
    float iou;
  };
  std::vector<Match> matches;
  if (!det_cls.empty()) {
    auto iou = BoxIoUMatrix(gt_boxes.to(at::kCPU).to(at::kFloat).reshape({-1, 4}), det_boxes).contiguous();
    const float* p = iou.data_ptr<float>();
    const int64_t m = iou.size(0), n = iou.size(1);
    for (int64_t l = 0; l < m; ++l) {
      for (int64_t d = 0; d < n; ++d) {
        if (p[l * n + d] > static_cast<float>(iou_)) matches.push_back({l, d, p[l * n + d]});
      }
    }
  }
  if (matches.size() > 1) {
    // Highest IoU first; keep the first pair per detection, then (re-sorted) the first per label.
    auto by_iou = [](std::vector<Match>& v) {
      std::stable_sort(v.begin(), v.end(), [](const Match& a, const Match& b) { return a.iou < b.iou; });
      std::reverse(v.begin(), v.end());
    };
    auto unique_by = [](const std::vector<Match>& v, bool by_det) {
      std::vector<Match> out;
      for (const Match& x : v) {
        const int64_t key = by_det ? x.det : x.label;
        if (std::none_of(out.begin(), out.end(), [&](const Match& y) { return (by_det ? y.det : y.label) == key; })) out.push_back(x);
      }
      return out;
    };
    by_iou(matches);
    matches = unique_by(matches, true);
    by_iou(matches);
    matches = unique_by(matches, false);
  }
  for (size_t i = 0; i < gt.size(); ++i) {
    int hits = 0;
    int64_t det = -1;
    for (const Match& x : matches) {
      if (x.label == static_cast<int64_t>(i)) ++hits, det = x.det;
    }
    if (hits == 1) {
      Add(det_cls[static_cast<size_t>(det)], gt[i]);  // correct or confused class
    } else {
      Add(nc_, gt[i]);  // missed
    }
  }
  for (size_t i = 0; i < det_cls.size(); ++i) {
    const bool matched = std::any_of(matches.begin(), matches.end(), [&](const Match& x) { return x.det == static_cast<int64_t>(i); });
    if (!matched) Add(det_cls[i], nc_);  // background false positive
  }
}

}  // namespace yc::trainer
