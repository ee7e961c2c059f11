#include "trainer/loss/pair_metrics.h"

#include <cmath>

#include <c10/core/GradMode.h>

namespace yc::trainer {
namespace {

constexpr double kIoUEps = 1e-7;  // BboxIoU's default, as Ultralytics' bbox_iou

// Side k of (..., 4) boxes as a view of `shape`.
at::Tensor Side(const at::Tensor& boxes, int64_t k, at::IntArrayRef shape) {
  return boxes.select(-1, k).reshape(shape);
}

}  // namespace

PairMetrics ComputePairMetrics(const at::Tensor& gt_bboxes, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                               const at::Tensor& valid_gt, const at::Tensor& box_scores, double alpha, double beta,
                               double inside_eps) {
  c10::NoGradGuard no_grad;
  const int64_t bs = gt_bboxes.size(0), nmax = gt_bboxes.size(1), na = pd_bboxes.size(1);
  const int64_t g[] = {bs, nmax, 1}, p[] = {bs, 1, na}, a[] = {1, 1, na};
  // Box sides: g* (B, M, 1), p* (B, 1, A); anchor centres ax, ay (1, 1, A). Each expression below is the one
  // of box_ops.cc's BboxIoU (box1 = the ground truth, box2 = the prediction), in the same order, so the
  // result is its result to the bit; the in-box test is `least edge distance > eps` as four comparisons.
  const at::Tensor gx1 = Side(gt_bboxes, 0, g), gy1 = Side(gt_bboxes, 1, g), gx2 = Side(gt_bboxes, 2, g),
                   gy2 = Side(gt_bboxes, 3, g);
  const at::Tensor px1 = Side(pd_bboxes, 0, p), py1 = Side(pd_bboxes, 1, p), px2 = Side(pd_bboxes, 2, p),
                   py2 = Side(pd_bboxes, 3, p);
  const at::Tensor ax = Side(anc_points.unsqueeze(0), 0, a), ay = Side(anc_points.unsqueeze(0), 1, a);
  const at::Tensor mask = (ax - gx1).gt(inside_eps) & (ay - gy1).gt(inside_eps) & (gx2 - ax).gt(inside_eps) &
                          (gy2 - ay).gt(inside_eps) & valid_gt.to(at::kBool);
  const double eps = kIoUEps;
  const at::Tensor w1 = gx2 - gx1, h1 = gy2 - gy1 + eps, w2 = px2 - px1, h2 = py2 - py1 + eps;
  const at::Tensor inter = (at::minimum(gx2, px2) - at::maximum(gx1, px1)).clamp_min(0) *
                           (at::minimum(gy2, py2) - at::maximum(gy1, py1)).clamp_min(0);
  const at::Tensor iou = inter / (w1 * h1 + w2 * h2 - inter + eps);
  const at::Tensor cw = at::maximum(gx2, px2) - at::minimum(gx1, px1);
  const at::Tensor ch = at::maximum(gy2, py2) - at::minimum(gy1, py1);
  const at::Tensor c2 = cw.pow(2) + ch.pow(2) + eps;
  const at::Tensor rho2 = ((px1 + px2 - gx1 - gx2).pow(2) + (py1 + py2 - gy1 - gy2).pow(2)) / 4;
  const at::Tensor v = (at::atan(w2 / h2) - at::atan(w1 / h1)).pow(2) * (4.0 / (M_PI * M_PI));
  const at::Tensor ciou = (iou - (rho2 / c2 + v * (v / (v - iou + (1.0 + eps))))).clamp_min(0);
  PairMetrics m;
  m.mask = mask;
  m.overlaps = at::where(mask, ciou, at::zeros({}, ciou.options()));
  m.align_metric = at::where(mask, box_scores, at::zeros({}, box_scores.options())).pow(alpha) * m.overlaps.pow(beta);
  return m;
}

}  // namespace yc::trainer
