// Mosaic-4 placement (`ultralytics/data/augment.py` Mosaic._mosaic4): four loaded images around a centre
// (xc, yc) of a 2s x 2s canvas filled with 114; image 0 (the sample itself) top-left, then the
// three partners top-right, bottom-left, bottom-right. Boxes follow their tile into canvas pixels,
// are clipped to [0, 2s] and those of zero area are dropped.
#pragma once

#include <array>
#include <opencv2/core.hpp>
#include <vector>

#include "libcache/base/box.h"
#include "loader/base/geometry.h"
#include "loader/base/rng.h"

namespace yc {

// Where one tile goes: its visible part `tile` (in the loaded image) lands on `canvas` (same size).
struct TilePlacement {
  cv::Rect canvas;         // [x1a, x2a) x [y1a, y2a)
  cv::Rect tile;           // [x1b, x2b) x [y1b, y2b)
  int padw = 0, padh = 0;  // canvas = tile coordinates + (padw, padh)
};

// The mosaic centre: yc then xc, each int(uniform(s // 2, 2s - s // 2)) with Python's floor division.
struct MosaicCentre {
  int xc = 0, yc = 0;
};
MosaicCentre DrawMosaicCentre(Rng& rng, int s);

// Placement of four tiles of the given (width, height) sizes, TL, TR, BL, BR.
std::array<TilePlacement, 4> MosaicPlacements(int s, int xc, int yc, const std::array<cv::Size, 4>& sizes);

// Appends a tile's normalised boxes as pixel xyxy (denormalised by the loaded size, then shifted by
// (padw, padh)). Non-finite rows and negative sizes are skipped.
void AppendTileBoxes(const Box* boxes, size_t count, cv::Size loaded, double padw, double padh,
                     std::vector<BoxXyxy>* out);

// Clamps x to [0, w] and y to [0, h] (Instances.clip).
void ClipBoxes(float w, float h, std::vector<BoxXyxy>* boxes);
// Keeps boxes with (x2 - x1) * (y2 - y1) > 0 (Instances.remove_zero_area_boxes).
void RemoveZeroAreaBoxes(std::vector<BoxXyxy>* boxes);

// Reference: the 2s x 2s canvas itself (only the reference path builds it).
void BuildMosaicCanvas(int s, const std::array<TilePlacement, 4>& placements, const std::array<cv::Mat, 4>& tiles,
                       cv::Mat* canvas);

}  // namespace yc
