// Ultralytics RandomPerspective (`ultralytics/data/augment.py`): M = T * S * R * P * C applied to the (mosaic
// canvas or letterboxed) image, output size = input + 2 * border, fill 114, INTER_LINEAR; boxes are mapped by
// their four corners, clipped to the output, and filtered by box_candidates against the pre-warp (clipped)
// box scaled by the drawn scale.
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "loader/base/geometry.h"
#include "loader/base/rng.h"
#include "loader/options.h"

namespace yc {

// The eight random draws, in Ultralytics' order. translate_x/y are the U(0.5 +/- translate)
// fractions, angle and shears are in degrees.
struct PerspectiveDraw {
  double persp_x = 0, persp_y = 0;
  double angle = 0, scale = 1;
  double shear_x = 0, shear_y = 0;
  double translate_x = 0.5, translate_y = 0.5;
};
PerspectiveDraw DrawPerspective(Rng& rng, const AugmentHyp& hyp);

struct AffineTransform {
  Mat3 M;                    // input pixel -> output pixel
  double scale = 1;          // the drawn scale (box_candidates reference)
  bool perspective = false;  // hyp.perspective != 0: warpPerspective and divide boxes by z
  int out_w = 0, out_h = 0;
  bool warp = true;  // false when border is 0 and M is the identity (Ultralytics skips the warp)
};

// Builds M for an in_w x in_h input with the given border (mosaic: -s/2 each side; letterbox: 0).
AffineTransform BuildAffine(const PerspectiveDraw& draw, bool perspective, int in_w, int in_h, int border_x,
                            int border_y);

// Maps boxes through M by their corners (x1,y1),(x2,y2),(x1,y2),(x2,y1) and takes min/max.
void TransformBoxes(const Mat3& M, bool perspective, std::vector<BoxXyxy>* boxes);

// box_candidates(box1=before, box2=after, wh_thr=2, ar_thr=100, area_thr, eps=1e-16): strict comparisons.
bool BoxCandidate(const BoxXyxy& before, const BoxXyxy& after, double area_thr = 0.1, double wh_thr = 2.0,
                  double ar_thr = 100.0, double eps = 1e-16);

// Whole box step: boxes (input pixels) -> mapped by `M` (which may include output flips), clipped to
// [0,out_w]x[0,out_h], filtered against the input boxes x scale. `scratch` avoids allocation.
void WarpBoxes(const Mat3& M, bool perspective, double scale, int out_w, int out_h, std::vector<BoxXyxy>* boxes,
               std::vector<BoxXyxy>* scratch);

// Reference pixel warp (cv::warpAffine / warpPerspective, INTER_LINEAR, constant 114).
void WarpImageReference(const cv::Mat& in, const AffineTransform& t, cv::Mat* out);

}  // namespace yc
