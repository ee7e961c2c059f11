#include "trainer/model/box_ops.h"

#include <cmath>

#include <c10/core/GradMode.h>

namespace yc::trainer {

at::Tensor XywhToXyxy(const at::Tensor& xywh) {
  auto xy = xywh.narrow(-1, 0, 2);
  auto half = xywh.narrow(-1, 2, 2) / 2;
  return at::cat({xy - half, xy + half}, -1);
}

at::Tensor XyxyToXywh(const at::Tensor& xyxy) {
  auto p1 = xyxy.narrow(-1, 0, 2);
  auto p2 = xyxy.narrow(-1, 2, 2);
  return at::cat({(p1 + p2) / 2, p2 - p1}, -1);
}

at::Tensor BboxIoU(const at::Tensor& box1, const at::Tensor& box2, IoUKind kind, double eps) {
  auto b1x1 = box1.select(-1, 0), b1y1 = box1.select(-1, 1), b1x2 = box1.select(-1, 2), b1y2 = box1.select(-1, 3);
  auto b2x1 = box2.select(-1, 0), b2y1 = box2.select(-1, 1), b2x2 = box2.select(-1, 2), b2y2 = box2.select(-1, 3);
  auto w1 = b1x2 - b1x1, h1 = b1y2 - b1y1 + eps;
  auto w2 = b2x2 - b2x1, h2 = b2y2 - b2y1 + eps;
  auto inter = (at::minimum(b1x2, b2x2) - at::maximum(b1x1, b2x1)).clamp_min(0) *
               (at::minimum(b1y2, b2y2) - at::maximum(b1y1, b2y1)).clamp_min(0);
  auto uni = w1 * h1 + w2 * h2 - inter + eps;
  auto iou = inter / uni;
  if (kind == IoUKind::kIoU) return iou;

  auto cw = at::maximum(b1x2, b2x2) - at::minimum(b1x1, b2x1);  // enclosing box
  auto ch = at::maximum(b1y2, b2y2) - at::minimum(b1y1, b2y1);
  auto c2 = cw.pow(2) + ch.pow(2) + eps;
  auto rho2 = ((b2x1 + b2x2 - b1x1 - b1x2).pow(2) + (b2y1 + b2y2 - b1y1 - b1y2).pow(2)) / 4;
  auto v = (4.0 / (M_PI * M_PI)) * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2);
  at::Tensor alpha;
  {
    // The trade-off weight is a constant for the gradient, as in the CIoU paper and Ultralytics.
    c10::NoGradGuard no_grad;
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - (rho2 / c2 + v * alpha);
}

at::Tensor BoxIoUMatrix(const at::Tensor& a, const at::Tensor& b, double eps) {
  auto a1 = a.narrow(1, 0, 2).unsqueeze(1), a2 = a.narrow(1, 2, 2).unsqueeze(1);  // (N, 1, 2)
  auto b1 = b.narrow(1, 0, 2).unsqueeze(0), b2 = b.narrow(1, 2, 2).unsqueeze(0);  // (1, M, 2)
  auto inter = (at::minimum(a2, b2) - at::maximum(a1, b1)).clamp_min(0).prod(2);
  return inter / ((a2 - a1).prod(2) + (b2 - b1).prod(2) - inter + eps);
}

Anchors MakeAnchors(const std::vector<std::pair<int64_t, int64_t>>& level_hw, const std::vector<double>& strides,
                    at::TensorOptions options, double offset) {
  std::vector<at::Tensor> points, stride_cols;
  points.reserve(level_hw.size());
  stride_cols.reserve(level_hw.size());
  for (size_t i = 0; i < level_hw.size() && i < strides.size(); ++i) {
    const auto [h, w] = level_hw[i];
    auto sx = at::arange(w, options) + offset;
    auto sy = at::arange(h, options) + offset;
    auto grid = at::meshgrid({sy, sx}, "ij");
    points.push_back(at::stack({grid[1], grid[0]}, -1).reshape({-1, 2}));
    stride_cols.push_back(at::full({h * w, 1}, strides[i], options));
  }
  return {at::cat(points), at::cat(stride_cols)};
}

Anchors MakeAnchors(const std::vector<at::Tensor>& feats, const std::vector<double>& strides, double offset) {
  std::vector<std::pair<int64_t, int64_t>> hw;
  hw.reserve(feats.size());
  for (const auto& f : feats) hw.emplace_back(f.size(2), f.size(3));
  return MakeAnchors(hw, strides, feats.front().options(), offset);
}

Anchors MakeAnchorsFromInputs(const std::vector<at::Tensor>& feats, const std::vector<double>& strides, double offset) {
  std::vector<at::Tensor> points, stride_cols;
  points.reserve(feats.size());
  stride_cols.reserve(feats.size());
  for (size_t i = 0; i < feats.size() && i < strides.size(); ++i) {
    // (H, W) ones on the feature map's device and dtype (ones_like records no device), counted along
    // each axis: the cell indices, exact integers as arange gives them.
    const at::Tensor ones = at::ones_like(feats[i].select(0, 0).select(0, 0));
    const at::Tensor sx = ones.cumsum(1) - (1.0 - offset);
    const at::Tensor sy = ones.cumsum(0) - (1.0 - offset);
    points.push_back(at::stack({sx, sy}, -1).reshape({-1, 2}));
    stride_cols.push_back(ones.reshape({-1, 1}) * strides[i]);
  }
  return {at::cat(points), at::cat(stride_cols)};
}

at::Tensor Dist2Bbox(const at::Tensor& distance, const at::Tensor& anchor_points, bool xywh, int64_t dim) {
  auto parts = distance.chunk(2, dim);
  auto x1y1 = anchor_points - parts[0];
  auto x2y2 = anchor_points + parts[1];
  if (xywh) return at::cat({(x1y1 + x2y2) / 2, x2y2 - x1y1}, dim);
  return at::cat({x1y1, x2y2}, dim);
}

at::Tensor Bbox2Dist(const at::Tensor& anchor_points, const at::Tensor& bbox, double reg_max) {
  auto parts = bbox.chunk(2, -1);
  return at::cat({anchor_points - parts[0], parts[1] - anchor_points}, -1).clamp_(0, reg_max - 0.01);
}

}  // namespace yc::trainer
