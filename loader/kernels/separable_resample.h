// Bilinear resampling for axis-aligned maps (scale + translation, possibly mirrored): the default
// hyperparameters (degrees = shear = perspective = 0) make every tile's warp separable, so it runs as
// a horizontal pass per source row and a vertical pass per output row, like cv::resize, instead of
// cv::warpAffine's per-pixel 2-D remap. Coordinates and weights use OpenCV's warp arithmetic (1/32
// pixel positions, (32 - f) / f weights, rounding (sum + 512) >> 10), so the result is bit-exact with
// cv::warpAffine for the same map.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <vector>

#include "loader/kernels/resample_avx512.h"

namespace yc {

// Source taps of a run of output pixels along one axis: the first of the two source pixels, and the
// weight of the second in 1/32 (0..31).
struct ResampleTaps {
  int first_out = 0;            // first output index of the run
  std::vector<int32_t> source;  // per output index: source pixel (column or row) of the first tap
  std::vector<int32_t> frac;    // per output index: weight of source + 1, in 1/32
};

struct ResampleScratch {
  std::vector<int16_t> rows[2];  // horizontally filtered source rows (3 channels, 1/32 scale)
  int cached[2] = {-1, -1};      // source row held by rows[i]
  std::vector<int32_t> byte_offset, weight_pair;
  HorizontalTables wide;  // the AVX-512 horizontal pass's per-tile tables
};

// Writes out(y, x) for every x in cols' run and y in rows' run: bilinear samples of `src` (CV_8UC3)
// at (cols.source[x] + cols.frac[x] / 32, rows.source[y] + rows.frac[y] / 32). Every tap and its
// right/lower neighbour must lie inside `src`.
void ResampleSeparable(const cv::Mat& src, const ResampleTaps& cols, const ResampleTaps& rows, cv::Mat* out,
                       ResampleScratch* scratch);

}  // namespace yc
