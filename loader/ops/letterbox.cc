#include "loader/ops/letterbox.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace yc {

double PyRound(double x) {
  const double r = std::round(x);  // ties away from zero
  if (std::fabs(x - std::trunc(x)) == 0.5) return 2.0 * std::round(x / 2.0);
  return r;
}

LetterboxGeometry ComputeLetterbox(int h, int w, int new_h, int new_w, bool scaleup, bool center) {
  LetterboxGeometry g;
  double r = std::min(static_cast<double>(new_h) / h, static_cast<double>(new_w) / w);
  if (!scaleup) r = std::min(r, 1.0);
  g.r = r;
  // A degenerate (e.g. 1-pixel) side can round to 0; keep at least one pixel so resize works.
  g.new_w = std::max(1, static_cast<int>(PyRound(w * r)));
  g.new_h = std::max(1, static_cast<int>(PyRound(h * r)));
  double dw = new_w - g.new_w, dh = new_h - g.new_h;
  if (center) {
    dw /= 2;
    dh /= 2;
  }
  g.top = center ? static_cast<int>(PyRound(dh - 0.1)) : 0;
  g.bottom = static_cast<int>(PyRound(dh + 0.1));
  g.left = center ? static_cast<int>(PyRound(dw - 0.1)) : 0;
  g.right = static_cast<int>(PyRound(dw + 0.1));
  g.top = std::max(g.top, 0), g.bottom = std::max(g.bottom, 0);
  g.left = std::max(g.left, 0), g.right = std::max(g.right, 0);
  return g;
}

void LetterboxBoxes(const LetterboxGeometry& g, std::vector<BoxXyxy>* boxes) {
  const float r = static_cast<float>(g.r);
  for (BoxXyxy& b : *boxes) {
    b.x1 = b.x1 * r + g.left, b.x2 = b.x2 * r + g.left;
    b.y1 = b.y1 * r + g.top, b.y2 = b.y2 * r + g.top;
  }
}

void LetterboxImage(const cv::Mat& in, const LetterboxGeometry& g, cv::Mat* out) {
  cv::Mat resized = in;
  if (in.cols != g.new_w || in.rows != g.new_h)
    cv::resize(in, resized, cv::Size(g.new_w, g.new_h), 0, 0, cv::INTER_LINEAR);
  cv::copyMakeBorder(resized, *out, g.top, g.bottom, g.left, g.right, cv::BORDER_CONSTANT, cv::Scalar::all(114));
}

}  // namespace yc
