// Ultralytics RandomFlip (`ultralytics/data/augment.py`): vertical (p = flipud) then horizontal (p = fliplr);
// each draws once even when p = 0. Boxes use continuous coordinates: x -> w - x (not w - 1 - x).
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "loader/base/geometry.h"
#include "loader/base/rng.h"

namespace yc {

struct FlipDraw {
  bool ud = false, lr = false;
};
FlipDraw DrawFlips(Rng& rng, double flipud, double fliplr);

void FlipBoxes(const FlipDraw& flip, float w, float h, std::vector<BoxXyxy>* boxes);

// The flip as a matrix x -> w - x, y -> h - y, so that F * M warps and flips in one pass. Boxes use
// the image size (continuous coordinates); pixel warps use size - 1, because OpenCV puts pixel
// centres on integers and np.fliplr sends column x to w - 1 - x.
Mat3 FlipMatrix(const FlipDraw& flip, double w, double h);

// Reference: cv::flip in place.
void FlipImage(const FlipDraw& flip, cv::Mat* image);

}  // namespace yc
