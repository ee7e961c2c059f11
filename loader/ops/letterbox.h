// Ultralytics LetterBox (`ultralytics/data/augment.py`): scale to fit new_shape (optionally never up), Python
// round() (half to even) for the unpadded size, centre padding split as round(d - 0.1) / round(d + 0.1), fill
// 114, INTER_LINEAR. Used by the non-mosaic train path (scaleup) and by val (no scaleup).
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "loader/base/geometry.h"

namespace yc {

// Python's round() on a double: nearest integer, ties to even.
double PyRound(double x);

struct LetterboxGeometry {
  double r = 1;              // scale applied to the image and boxes
  int new_w = 0, new_h = 0;  // unpadded, resized size
  int top = 0, bottom = 0, left = 0, right = 0;
  int out_w() const { return new_w + left + right; }
  int out_h() const { return new_h + top + bottom; }
};

LetterboxGeometry ComputeLetterbox(int h, int w, int new_h, int new_w, bool scaleup, bool center = true);

// Boxes in the input image's pixels -> letterboxed pixels: * r + (left, top). No clipping.
void LetterboxBoxes(const LetterboxGeometry& g, std::vector<BoxXyxy>* boxes);

// Reference: cv::resize (if the size changes) + cv::copyMakeBorder(114).
void LetterboxImage(const cv::Mat& in, const LetterboxGeometry& g, cv::Mat* out);

}  // namespace yc
