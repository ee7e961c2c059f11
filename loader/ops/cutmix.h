// Ultralytics CutMix (`ultralytics/data/augment.py` CutMix, beta 1, num_areas 3), after MixUp and before
// HSV and the flips: three candidate rectangles are drawn (lam ~ Beta(1, 1), cut = int(size *
// sqrt(1 - lam)), a uniform centre, corners centre -/+ cut // 2 clipped to the image); among those that
// overlap none of the sample's boxes one is picked at random; the second sample's boxes whose
// intersection over their own area with it is >= 0.1 are kept, clipped to it, and appended after the
// sample's boxes, and its pixels there replace the sample's. No free rectangle, or no partner box in
// the chosen one: the sample stays as it was (Ultralytics returns before pasting).
#pragma once

#include <array>
#include <opencv2/core.hpp>
#include <vector>

#include "base/status.h"
#include "loader/base/geometry.h"
#include "loader/base/rng.h"
#include "loader/ops/flip.h"

namespace yc {

// Pixels [x1, x2) x [y1, y2) of the image.
struct CutArea {
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

struct CutMixDraw {
  std::array<CutArea, 3> areas;
  double pick = 0;  // U[0, 1): which of the free areas (Ultralytics' np.random.choice over them)
};

// The three candidate areas for a width x height image, then the pick.
CutMixDraw DrawCutMix(Rng& rng, int width, int height);

// The draw as it lands on the image flipped by `flip` (the fast path renders flipped images): column
// x goes to width - 1 - x, so [x1, x2) becomes [width - x2, width - x1); rows likewise.
CutMixDraw FlipCutMixDraw(const CutMixDraw& draw, const FlipDraw& flip, int width, int height);

// The area to paste, or nullptr when every candidate overlaps one of `boxes` (xyxy pixels).
const CutArea* PickCutArea(const CutMixDraw& draw, const std::vector<BoxXyxy>& boxes);

// Appends to *boxes the `partner` boxes kept for `area`, clipped to it; false when none is (then
// nothing is appended and nothing may be pasted).
bool AppendCutBoxes(const CutArea& area, const std::vector<BoxXyxy>& partner, std::vector<BoxXyxy>* boxes);

// image(area) = partner(area); both CV_8UC3 of the same size.
void PasteCutArea(const cv::Mat& partner, const CutArea& area, cv::Mat* image);

// The whole transform on *image and its *boxes. The partner is rendered (`render(partner,
// partner_boxes)` -> Status, the same size as *image) only once an area is free: its pixels and boxes
// matter nowhere else.
template <typename RenderPartner>
Status ApplyCutMix(const CutMixDraw& draw, RenderPartner render, cv::Mat* partner, std::vector<BoxXyxy>* partner_boxes,
                   cv::Mat* image, std::vector<BoxXyxy>* boxes) {
  const CutArea* area = PickCutArea(draw, *boxes);
  if (area == nullptr) return Status::OK();
  YC_RETURN_IF_ERROR(render(partner, partner_boxes));
  if (AppendCutBoxes(*area, *partner_boxes, boxes)) PasteCutArea(*partner, *area, image);
  return Status::OK();
}

}  // namespace yc
