// The fast path's core: renders warp(canvas, M) without building the canvas. The canvas is an
// unbounded plane of 114 with a few image rectangles pasted on it (four mosaic tiles, or one
// letterboxed image); M maps canvas pixels to output pixels (it may include flips and perspective).
//
// Each tile is warped straight into the output with its own composed transform over a ROI of just
// its visible part, with BORDER_TRANSPARENT, so it writes exactly the output pixels whose bilinear
// 2x2 neighbourhood lies inside that part. The output pixels whose neighbourhood straddles a tile
// edge (a tile/tile seam, or tile/114) are then computed by sampling the virtual canvas, with
// OpenCV's 1/32-pixel fixed-point bilinear arithmetic; pixels whose neighbourhood is all 114 keep
// the initial fill. The result matches cv::warpAffine/warpPerspective of the real canvas up to
// fixed-point rounding (within one level; see tests/loader/fast_path_test.cc).
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "loader/base/geometry.h"
#include "loader/kernels/separable_resample.h"

namespace yc {

struct CanvasTile {
  cv::Mat image;     // loaded RGB image (CV_8UC3)
  cv::Rect visible;  // the part of `image` that is on the canvas
  cv::Point origin;  // canvas position of visible.tl()
};

// How tiles are warped: kAuto takes the separable resampler for axis-aligned maps (bit-exact with
// cv::warpAffine, several times faster) and cv::warpAffine/warpPerspective otherwise; kOpenCV always
// uses OpenCV (tests compare the two).
enum class WarpMethod { kAuto, kOpenCV };

struct CanvasWarpScratch {
  std::vector<ResampleTaps> taps;  // per tile: columns, rows (separable path)
  std::vector<cv::Rect> written;   // the output rectangles the tiles' resamplings write
  ResampleScratch resample;
  std::vector<int> seam_x, seam_y;  // canvas coordinates (1/32 pixel) per output column / row
};

// `out` must be allocated (CV_8UC3, the output size); its previous content is overwritten.
// Every OpenCV call works on bands of <= 64 Ki pixels so OpenCV never spawns its own parallel work
// (the loader already runs one sample per thread). `scratch` is reused between calls.
void RenderCanvasWarp(const CanvasTile* tiles, int count, const Mat3& M, bool perspective, cv::Mat* out,
                      CanvasWarpScratch* scratch, WarpMethod method = WarpMethod::kAuto);

// The canvas value at integer canvas pixel (x, y) (114 outside every tile), for tests.
void CanvasPixel(const CanvasTile* tiles, int count, int x, int y, uint8_t rgb[3]);

}  // namespace yc
