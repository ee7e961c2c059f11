#include "trainer/eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "trainer/model/box_ops.h"

namespace yc::trainer {

const std::vector<float>& IouThresholds() {
  static const std::vector<float> kThresholds = [] {
    auto t = at::linspace(0.5, 0.95, 10, at::kFloat).contiguous();
    return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }();
  return kThresholds;
}

at::Tensor MatchPredictions(const at::Tensor& pred_classes, const at::Tensor& true_classes, const at::Tensor& iou,
                            const std::vector<float>& thresholds) {
  const int64_t n = pred_classes.numel(), m = true_classes.numel();
  const int64_t t = static_cast<int64_t>(thresholds.size());
  auto correct = at::zeros({n, t}, at::kBool);
  if (n == 0 || m == 0) return correct;
  auto pc = pred_classes.to(at::kCPU).to(at::kLong).contiguous();
  auto tc = true_classes.to(at::kCPU).to(at::kLong).contiguous();
  auto io = iou.to(at::kCPU).to(at::kFloat).contiguous();
  const int64_t* pcp = pc.data_ptr<int64_t>();
  const int64_t* tcp = tc.data_ptr<int64_t>();
  const float* iop = io.data_ptr<float>();
  bool* out = correct.data_ptr<bool>();

  struct Pair {
    int64_t label, det;
    float iou;
  };
  std::vector<Pair> pairs;
  std::vector<Pair> by_det;
  std::vector<uint8_t> det_seen(static_cast<size_t>(n)), label_seen(static_cast<size_t>(m));
  for (int64_t ti = 0; ti < t; ++ti) {
    pairs.clear();
    for (int64_t l = 0; l < m; ++l) {  // row-major like np.nonzero
      for (int64_t d = 0; d < n; ++d) {
        const float v = tcp[l] == pcp[d] ? iop[l * n + d] : 0.0f;
        if (v >= thresholds[ti]) pairs.push_back({l, d, v});
      }
    }
    if (pairs.empty()) continue;
    if (pairs.size() == 1) {
      out[pairs[0].det * t + ti] = true;
      continue;
    }
    // argsort()[::-1]: descending IoU; among equal IoUs the later pair comes first.
    std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.iou < b.iou; });
    std::reverse(pairs.begin(), pairs.end());
    // np.unique over detections keeps each detection's first (highest-IoU) pair and re-orders the
    // survivors by detection index; the unique over labels then keeps, per label, the surviving pair
    // with the smallest detection index.
    std::fill(det_seen.begin(), det_seen.end(), 0);
    by_det.clear();
    for (const auto& p : pairs) {
      if (!det_seen[p.det]) {
        det_seen[p.det] = 1;
        by_det.push_back(p);
      }
    }
    std::sort(by_det.begin(), by_det.end(), [](const Pair& a, const Pair& b) { return a.det < b.det; });
    std::fill(label_seen.begin(), label_seen.end(), 0);
    for (const auto& p : by_det) {
      if (!label_seen[p.label]) {
        label_seen[p.label] = 1;
        out[p.det * t + ti] = true;
      }
    }
  }
  return correct;
}

double Interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left, double right) {
  const int64_t n = static_cast<int64_t>(xp.size());
  if (n == 0) return left;
  if (x > xp[n - 1]) return right;
  if (x < xp[0]) return left;
  // Last j with xp[j] <= x, as numpy's binary_search_with_guess.
  const int64_t j = static_cast<int64_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j >= n - 1) return fp[n - 1];
  if (xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  double y = slope * (x - xp[j]) + fp[j];
  if (std::isnan(y)) {
    y = slope * (x - xp[j + 1]) + fp[j + 1];
    if (std::isnan(y) && fp[j] == fp[j + 1]) y = fp[j];
  }
  return y;
}

const std::vector<double>& CurveX() {
  static const std::vector<double> kX = [] {
    constexpr int kCurve = 1000;
    std::vector<double> xs(kCurve);
    for (int i = 0; i < kCurve; ++i) xs[i] = i == kCurve - 1 ? 1.0 : static_cast<double>(i) * (1.0 / (kCurve - 1));
    return xs;
  }();
  return kX;
}

double ComputeAP(const std::vector<double>& recall, const std::vector<double>& precision,
                 const std::vector<double>* curve_x, std::vector<double>* envelope_at) {
  std::vector<double> mrec, mpre;
  mrec.reserve(recall.size() + 2);
  mpre.reserve(precision.size() + 2);
  mrec.push_back(0.0);
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mrec.push_back(1.0);
  mpre.push_back(1.0);
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mpre.push_back(0.0);
  for (int64_t i = static_cast<int64_t>(mpre.size()) - 2; i >= 0; --i) mpre[i] = std::max(mpre[i], mpre[i + 1]);
  // np.trapz(np.interp(linspace(0, 1, 101), mrec, mpre), linspace(0, 1, 101))
  constexpr int kPoints = 101;
  double ap = 0, prev_x = 0, prev_y = 0;
  for (int i = 0; i < kPoints; ++i) {
    const double x = i == kPoints - 1 ? 1.0 : static_cast<double>(i) * (1.0 / (kPoints - 1));
    const double y = Interp(x, mrec, mpre, mpre.front(), mpre.back());
    if (i > 0) ap += (x - prev_x) * (y + prev_y) / 2.0;
    prev_x = x;
    prev_y = y;
  }
  if (curve_x != nullptr && envelope_at != nullptr) {
    envelope_at->resize(curve_x->size());
    for (size_t i = 0; i < curve_x->size(); ++i) (*envelope_at)[i] = Interp((*curve_x)[i], mrec, mpre, mpre.front(), mpre.back());
  }
  return ap;
}

std::vector<double> Smooth(const std::vector<double>& y, double f) {
  const int64_t n = static_cast<int64_t>(y.size());
  if (n == 0) return y;
  const int64_t nf = static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * f * 2)) / 2 + 1;
  const int64_t pad = nf / 2;
  std::vector<double> yp;
  yp.reserve(static_cast<size_t>(n + 2 * pad));
  yp.insert(yp.end(), static_cast<size_t>(pad), y.front());
  yp.insert(yp.end(), y.begin(), y.end());
  yp.insert(yp.end(), static_cast<size_t>(pad), y.back());
  const double w = 1.0 / static_cast<double>(nf);  // np.ones(nf) / nf
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t k = 0; k < nf; ++k) s += yp[i + k] * w;
    out[i] = s;
  }
  return out;
}

ApPerClassResult ApPerClass(const std::vector<uint8_t>& tp, int64_t num_thresholds, const std::vector<float>& conf,
                            const std::vector<int64_t>& pred_cls, const std::vector<int64_t>& target_cls) {
  constexpr int kCurve = 1000;
  constexpr double kEps = 1e-16;
  const int64_t t = num_thresholds;
  const int64_t n = static_cast<int64_t>(conf.size());
  ApPerClassResult res;
  std::map<int64_t, int64_t> counts;
  for (int64_t c : target_cls) ++counts[c];
  for (const auto& [c, k] : counts) {
    res.classes.push_back(c);
    res.num_targets.push_back(k);
  }
  const size_t nc = res.classes.size();
  res.ap.assign(nc, std::vector<double>(static_cast<size_t>(t), 0.0));
  std::vector<std::vector<double>> p_curve(nc, std::vector<double>(kCurve, 0.0)), r_curve = p_curve;

  // Sort by descending confidence (stable: equal confidences keep their order).
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return conf[a] > conf[b]; });

  const std::vector<double>& xs = CurveX();
  res.pr_curve.assign(nc, std::vector<double>(kCurve, 0.0));

  std::vector<int64_t> idx;
  std::vector<double> neg_conf, recall_col, precision_col;
  std::vector<std::vector<double>> recall(static_cast<size_t>(t)), precision(static_cast<size_t>(t));
  for (size_t ci = 0; ci < nc; ++ci) {
    const int64_t c = res.classes[ci];
    const double n_l = static_cast<double>(res.num_targets[ci]);
    idx.clear();
    for (int64_t k : order) {
      if (pred_cls[k] == c) idx.push_back(k);
    }
    if (idx.empty()) continue;
    const size_t np = idx.size();
    neg_conf.resize(np);
    for (size_t k = 0; k < np; ++k) neg_conf[k] = -static_cast<double>(conf[idx[k]]);
    for (int64_t j = 0; j < t; ++j) {
      auto& rc = recall[j];
      auto& pc = precision[j];
      rc.resize(np);
      pc.resize(np);
      double tpc = 0, fpc = 0;
      for (size_t k = 0; k < np; ++k) {
        const bool hit = tp[static_cast<size_t>(idx[k] * t + j)] != 0;
        tpc += hit ? 1.0 : 0.0;
        fpc += hit ? 0.0 : 1.0;
        rc[k] = tpc / (n_l + kEps);
        pc[k] = tpc / (tpc + fpc);
      }
      res.ap[ci][j] = j == 0 ? ComputeAP(rc, pc, &xs, &res.pr_curve[ci]) : ComputeAP(rc, pc);
    }
    // Curves over confidence at IoU 0.5 (negated axes because conf decreases).
    for (int i = 0; i < kCurve; ++i) {
      r_curve[ci][i] = Interp(-xs[i], neg_conf, recall[0], 0.0, recall[0].back());
      p_curve[ci][i] = Interp(-xs[i], neg_conf, precision[0], 1.0, precision[0].back());
    }
  }

  // Confidence maximising the smoothed mean F1 over classes.
  std::vector<double> f1_mean(kCurve, 0.0);
  std::vector<std::vector<double>> f1(nc, std::vector<double>(kCurve, 0.0));
  for (size_t ci = 0; ci < nc; ++ci) {
    for (int i = 0; i < kCurve; ++i) {
      const double p = p_curve[ci][i], r = r_curve[ci][i];
      f1[ci][i] = 2 * p * r / (p + r + kEps);
      f1_mean[i] += f1[ci][i];
    }
  }
  if (nc > 0) {
    for (auto& v : f1_mean) v /= static_cast<double>(nc);
  }
  const auto smooth = Smooth(f1_mean, 0.1);
  const size_t best = static_cast<size_t>(std::max_element(smooth.begin(), smooth.end()) - smooth.begin());
  res.p.resize(nc);
  res.r.resize(nc);
  res.f1.resize(nc);
  for (size_t ci = 0; ci < nc; ++ci) {
    res.p[ci] = p_curve[ci][best];
    res.r[ci] = r_curve[ci][best];
    res.f1[ci] = f1[ci][best];
  }
  res.f1_curve = std::move(f1);
  res.p_curve = std::move(p_curve);
  res.r_curve = std::move(r_curve);
  return res;
}

void DetectionMetrics::Update(const at::Tensor& detections, const at::Tensor& gt_boxes, const at::Tensor& gt_cls) {
  ++images_;
  const int64_t t = static_cast<int64_t>(IouThresholds().size());
  auto cls = gt_cls.defined() ? gt_cls.to(at::kCPU).to(at::kLong).reshape({-1}).contiguous()
                              : at::zeros({0}, at::kLong);
  const int64_t nl = cls.numel();
  const int64_t npr = detections.defined() && detections.dim() == 2 ? detections.size(0) : 0;
  const int64_t* cp = cls.data_ptr<int64_t>();
  std::vector<int64_t> present(cp, cp + nl);
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  for (int64_t c : present) {
    if (c < 0) continue;
    if (static_cast<size_t>(c) >= images_per_class_.size()) images_per_class_.resize(static_cast<size_t>(c) + 1, 0);
    ++images_per_class_[static_cast<size_t>(c)];
  }
  if (npr == 0) {
    target_cls_.insert(target_cls_.end(), cp, cp + nl);
    return;
  }
  auto det = detections.to(at::kCPU).to(at::kFloat).contiguous();
  at::Tensor correct;
  if (nl > 0) {
    auto gt = gt_boxes.to(at::kCPU).to(at::kFloat).reshape({-1, 4});
    auto iou = BoxIoUMatrix(gt, det.narrow(1, 0, 4));  // (labels, detections) as Ultralytics' box_iou
    correct = MatchPredictions(det.select(1, 5), cls, iou).contiguous();
  } else {
    correct = at::zeros({npr, t}, at::kBool);
  }
  const bool* cptr = correct.data_ptr<bool>();
  tp_.insert(tp_.end(), cptr, cptr + npr * t);
  const float* d = det.data_ptr<float>();
  for (int64_t i = 0; i < npr; ++i) {
    conf_.push_back(d[i * 6 + 4]);
    pred_cls_.push_back(static_cast<int64_t>(d[i * 6 + 5]));
  }
  target_cls_.insert(target_cls_.end(), cp, cp + nl);
}

MetricsSummary DetectionMetrics::Compute() const {
  MetricsSummary s;
  s.images = images_;
  s.instances = static_cast<int64_t>(target_cls_.size());
  s.images_per_class = images_per_class_;
  s.instances_per_class.assign(images_per_class_.size(), 0);
  for (int64_t c : target_cls_) {
    if (c >= 0 && static_cast<size_t>(c) < s.instances_per_class.size()) ++s.instances_per_class[static_cast<size_t>(c)];
  }
  // Ultralytics skips the computation (all zeros) when nothing was ever a true positive.
  if (std::none_of(tp_.begin(), tp_.end(), [](uint8_t v) { return v != 0; })) return s;
  const int64_t t = static_cast<int64_t>(IouThresholds().size());
  s.per_class = ApPerClass(tp_, t, conf_, pred_cls_, target_cls_);
  const auto& pc = s.per_class;
  const size_t nc = pc.classes.size();
  if (nc == 0) return s;
  double p = 0, r = 0, ap50 = 0, ap = 0;
  for (size_t ci = 0; ci < nc; ++ci) {
    p += pc.p[ci];
    r += pc.r[ci];
    ap50 += pc.ap[ci][0];
    for (double v : pc.ap[ci]) ap += v;
  }
  s.precision = p / static_cast<double>(nc);
  s.recall = r / static_cast<double>(nc);
  s.map50 = ap50 / static_cast<double>(nc);
  s.map50_95 = ap / static_cast<double>(nc * static_cast<size_t>(t));
  s.fitness = 0.1 * s.map50 + 0.9 * s.map50_95;
  return s;
}

void DetectionMetrics::Reset() {
  tp_.clear();
  conf_.clear();
  pred_cls_.clear();
  target_cls_.clear();
  images_per_class_.clear();
  images_ = 0;
}

}  // namespace yc::trainer
