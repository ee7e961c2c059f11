// The separable resampler at every instruction-set level against the bilinear formula written out.
#include "loader/kernels/separable_resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "loader/base/rng.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

// `n` taps starting at `start` source pixels, stepping `step` (negative: mirrored), in 1/32 pixel.
ResampleTaps MakeTaps(double start, double step, int n, int first_out) {
  ResampleTaps t;
  t.first_out = first_out;
  for (int k = 0; k < n; ++k) {
    const long fixed = std::lround((start + step * k) * 32);
    t.source.push_back(static_cast<int32_t>(fixed >> 5));
    t.frac.push_back(static_cast<int32_t>(fixed & 31));
  }
  return t;
}

uint8_t Expected(const uint8_t* src, int width, const ResampleTaps& cols, const ResampleTaps& rows, int kx, int ky,
                 int c) {
  auto at = [&](int y, int x) { return static_cast<int>(src[(static_cast<size_t>(y) * width + x) * 3 + c]); };
  const int sx = cols.source[kx], fx = cols.frac[kx], sy = rows.source[ky], fy = rows.frac[ky];
  const int top = at(sy, sx) * (32 - fx) + at(sy, sx + 1) * fx;
  const int bottom = fy != 0 ? at(sy + 1, sx) * (32 - fx) + at(sy + 1, sx + 1) * fx : 0;
  return static_cast<uint8_t>((top * (32 - fy) + bottom * fy + 512) >> 10);
}

TEST(SeparableResampleTest, EveryLevelMatchesTheFormulaAtEveryScaleWidthAndEdge) {
  const int width = 203, height = 61;
  // Exactly sized, so a read past the last row's last pixel would leave the buffer (ASan).
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  Rng rng(5, 0, 0);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.NextU64());
  const cv::Mat src(height, width, CV_8UC3, pixels.data());

  struct Case {
    double step;  // source pixels per output pixel (> 2.6: wider than the AVX-512 window)
    bool mirrored;
  };
  const Case cases[] = {{0.5, false}, {0.77, false}, {1.0, false}, {1.3, true}, {2.0, false}, {2.0, true},
                        {3.1, false}, {3.1, true}};
  for (const Case& c : cases) {
    for (int n : {1, 15, 16, 17, 33, 47, 64}) {
      const double span = c.step * (n - 1);
      if (span + 1 >= width - 1) continue;
      // The run ends on the last column pair (the right edge) or starts at column 0, mirrored or not.
      const double last = width - 2 + 0.5;
      const double start = c.mirrored ? last : last - span;
      const ResampleTaps cols = MakeTaps(start, c.mirrored ? -c.step : c.step, n, 3);
      const ResampleTaps rows = MakeTaps(height - 2 - 0.75 * 20, 0.75, 21, 2);  // down to the last row pair
      std::vector<std::vector<uint8_t>> outputs;
      for (SimdLevel level : testing::kAllSimdLevels) {
        const testing::ScopedSimdCap cap(level);
        cv::Mat out(rows.first_out + 21 + 2, cols.first_out + n + 2, CV_8UC3, cv::Scalar::all(7));
        ResampleScratch scratch;
        ResampleSeparable(src, cols, rows, &out, &scratch);
        for (int y = 0; y < out.rows; ++y)
          for (int x = 0; x < out.cols; ++x)
            for (int ch = 0; ch < 3; ++ch) {
              const int kx = x - cols.first_out, ky = y - rows.first_out;
              const bool inside = kx >= 0 && kx < n && ky >= 0 && ky < 21;
              const uint8_t want = inside ? Expected(pixels.data(), width, cols, rows, kx, ky, ch) : 7;
              ASSERT_EQ(out.at<cv::Vec3b>(y, x)[ch], want)
                  << SimdLevelName(level) << " step " << c.step << (c.mirrored ? " mirrored" : "") << " n " << n
                  << " at " << x << "," << y;
            }
      }
    }
  }
}

}  // namespace
}  // namespace yc
