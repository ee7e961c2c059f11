// The geometry of one Mosaic/LetterBox + RandomPerspective sample, shared by both image paths:
// which image rectangles sit where on the canvas, the affine/perspective transform from canvas to
// output, and the boxes in canvas pixels before the warp (already clipped/filtered for mosaic).
#pragma once

#include <array>
#include <vector>

#include "loader/kernels/canvas_warp.h"
#include "loader/ops/letterbox.h"
#include "loader/ops/mosaic.h"
#include "loader/ops/random_perspective.h"
#include "loader/options.h"
#include "loader/render/inputs.h"
#include "loader/render/plan.h"

namespace yc {

struct SubGeometry {
  bool mosaic = false;
  std::array<TilePlacement, 4> placements;  // mosaic
  LetterboxGeometry letterbox;              // non-mosaic
  AffineTransform affine;
  int canvas_w = 0, canvas_h = 0;  // 2s x 2s (mosaic) or s x s (letterboxed)
};

// Fills *geometry and the canvas-space boxes (*boxes is replaced). `shape` (w, h) is the output's: a
// letterboxed sample is letterboxed into it (Ultralytics' LetterBox takes the rect batch's shape,
// `rect_shape`); a mosaic is always imgsz x imgsz (rect batches have no mosaic).
void ComputeSubGeometry(const SubPlan& plan, const SubInputs& inputs, const LoaderOptions& options, cv::Size shape,
                        SubGeometry* geometry, std::vector<BoxXyxy>* boxes);

}  // namespace yc
