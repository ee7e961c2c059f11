#include "loader/ops/random_perspective.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace yc {

PerspectiveDraw DrawPerspective(Rng& rng, const AugmentHyp& h) {
  // Python `random.uniform` consumes one draw even for a zero range; so do we, to keep the order.
  PerspectiveDraw d;
  d.persp_x = rng.Uniform(-h.perspective, h.perspective);
  d.persp_y = rng.Uniform(-h.perspective, h.perspective);
  d.angle = rng.Uniform(-h.degrees, h.degrees);
  d.scale = rng.Uniform(1 - h.scale, 1 + h.scale);
  d.shear_x = rng.Uniform(-h.shear, h.shear);
  d.shear_y = rng.Uniform(-h.shear, h.shear);
  d.translate_x = rng.Uniform(0.5 - h.translate, 0.5 + h.translate);
  d.translate_y = rng.Uniform(0.5 - h.translate, 0.5 + h.translate);
  return d;
}

AffineTransform BuildAffine(const PerspectiveDraw& d, bool perspective, int in_w, int in_h, int border_x,
                            int border_y) {
  AffineTransform t;
  t.out_w = in_w + 2 * border_x;
  t.out_h = in_h + 2 * border_y;
  t.scale = d.scale;
  t.perspective = perspective;
  const Mat3 C = Mat3::Translation(-in_w / 2.0, -in_h / 2.0);
  Mat3 P;
  P(2, 0) = d.persp_x;
  P(2, 1) = d.persp_y;
  // cv2.getRotationMatrix2D(center=(0,0), angle, scale): [[a, b, 0], [-b, a, 0]], a = s cos, b = s sin.
  const double theta = d.angle * M_PI / 180.0;
  Mat3 R;
  R(0, 0) = d.scale * std::cos(theta);
  R(0, 1) = d.scale * std::sin(theta);
  R(1, 0) = -d.scale * std::sin(theta);
  R(1, 1) = d.scale * std::cos(theta);
  Mat3 S;
  S(0, 1) = std::tan(d.shear_x * M_PI / 180.0);
  S(1, 0) = std::tan(d.shear_y * M_PI / 180.0);
  const Mat3 T = Mat3::Translation(d.translate_x * t.out_w, d.translate_y * t.out_h);
  t.M = T * S * R * P * C;
  t.warp = border_x != 0 || border_y != 0 || !t.M.IsIdentity();
  return t;
}

void TransformBoxes(const Mat3& M, bool perspective, std::vector<BoxXyxy>* boxes) {
  for (BoxXyxy& b : *boxes) {
    const double xs[4] = {b.x1, b.x2, b.x1, b.x2};
    const double ys[4] = {b.y1, b.y2, b.y2, b.y1};
    double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY;
    for (int k = 0; k < 4; ++k) {
      double x, y;
      M.Apply(xs[k], ys[k], perspective, &x, &y);
      minx = std::min(minx, x), maxx = std::max(maxx, x);
      miny = std::min(miny, y), maxy = std::max(maxy, y);
    }
    b.x1 = static_cast<float>(minx), b.y1 = static_cast<float>(miny);
    b.x2 = static_cast<float>(maxx), b.y2 = static_cast<float>(maxy);
  }
}

bool BoxCandidate(const BoxXyxy& before, const BoxXyxy& after, double area_thr, double wh_thr, double ar_thr,
                  double eps) {
  const double w1 = before.Width(), h1 = before.Height();
  const double w2 = after.Width(), h2 = after.Height();
  const double ar = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
  return w2 > wh_thr && h2 > wh_thr && w2 * h2 / (w1 * h1 + eps) > area_thr && ar < ar_thr;
}

void WarpBoxes(const Mat3& M, bool perspective, double scale, int out_w, int out_h, std::vector<BoxXyxy>* boxes,
               std::vector<BoxXyxy>* scratch) {
  scratch->assign(boxes->begin(), boxes->end());  // the pre-warp boxes, for box_candidates
  TransformBoxes(M, perspective, boxes);
  size_t kept = 0;
  for (size_t i = 0; i < boxes->size(); ++i) {
    BoxXyxy b = (*boxes)[i];
    b.x1 = std::clamp(b.x1, 0.0f, static_cast<float>(out_w));
    b.x2 = std::clamp(b.x2, 0.0f, static_cast<float>(out_w));
    b.y1 = std::clamp(b.y1, 0.0f, static_cast<float>(out_h));
    b.y2 = std::clamp(b.y2, 0.0f, static_cast<float>(out_h));
    BoxXyxy before = (*scratch)[i];  // Instances.scale(sc, sc): multiplies the coordinates
    before.x1 = static_cast<float>(before.x1 * scale), before.x2 = static_cast<float>(before.x2 * scale);
    before.y1 = static_cast<float>(before.y1 * scale), before.y2 = static_cast<float>(before.y2 * scale);
    if (BoxCandidate(before, b)) (*boxes)[kept++] = b;
  }
  boxes->resize(kept);
}

void WarpImageReference(const cv::Mat& in, const AffineTransform& t, cv::Mat* out) {
  if (!t.warp) {
    in.copyTo(*out);
    return;
  }
  const cv::Size size(t.out_w, t.out_h);
  if (t.perspective) {
    const cv::Mat M(3, 3, CV_64F, const_cast<double*>(t.M.m.data()));
    cv::warpPerspective(in, *out, M, size, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(114));
  } else {
    const cv::Mat M(2, 3, CV_64F, const_cast<double*>(t.M.m.data()));
    cv::warpAffine(in, *out, M, size, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(114));
  }
}

}  // namespace yc
