// RandomHSV (`ultralytics/data/augment.py`): LUT values and the fast path against the cvtColor baseline.
#include "loader/ops/hsv.h"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "loader/kernels/hsv_kernel.h"
#include "loader/kernels/hsv_simd.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

TEST(HsvTest, AdditiveHueWrapsAndTruncates) {
  HsvGains g;
  g.enabled = true;
  g.h = 0.01;  // +1.8 hue units
  HsvLut lut = MakeHsvLut(g);
  EXPECT_EQ(lut.h[0], 1);  // floor(1.8)
  EXPECT_EQ(lut.h[100], 101);
  EXPECT_EQ(lut.h[178], 179);  // floor(179.8)
  EXPECT_EQ(lut.h[179], 0);    // 180.8 % 180 = 0.8
  g.h = -0.01;                 // -1.8: Python % keeps the result in [0, 180)
  lut = MakeHsvLut(g);
  EXPECT_EQ(lut.h[0], 178);  // floor(178.2)
  EXPECT_EQ(lut.h[1], 179);
  EXPECT_EQ(lut.h[2], 0);  // floor(0.2)
  EXPECT_EQ(lut.h[100], 98);
}

TEST(HsvTest, SaturationAndValueClipTruncateAndKeepGrey) {
  HsvGains g;
  g.enabled = true;
  g.s = 0.5, g.v = -0.5;
  const HsvLut lut = MakeHsvLut(g);
  EXPECT_EQ(lut.s[0], 0);  // forced: grey stays grey
  EXPECT_EQ(lut.s[1], 1);  // floor(1.5)
  EXPECT_EQ(lut.s[100], 150);
  EXPECT_EQ(lut.s[200], 255);  // clipped
  EXPECT_EQ(lut.v[255], 127);  // floor(127.5)
  EXPECT_EQ(lut.v[1], 0);      // floor(0.5)
  g.s = -1.0;                  // desaturate entirely
  EXPECT_EQ(MakeHsvLut(g).s[255], 0);
}

TEST(HsvTest, GainsDrawnOnlyWhenSomeHypIsSet) {
  AugmentHyp h;
  h.hsv_h = h.hsv_s = h.hsv_v = 0;
  Rng a(1, 0, 0), b(1, 0, 0);
  EXPECT_FALSE(DrawHsvGains(a, h).enabled);
  EXPECT_EQ(a.NextU64(), b.NextU64());  // no draw consumed
  h = AugmentHyp();
  Rng c(1, 0, 0), d(1, 0, 0);
  const HsvGains g = DrawHsvGains(c, h);
  EXPECT_TRUE(g.enabled);
  EXPECT_DOUBLE_EQ(g.h, d.Uniform(-1, 1) * 0.015);
  EXPECT_DOUBLE_EQ(g.s, d.Uniform(-1, 1) * 0.7);
  EXPECT_DOUBLE_EQ(g.v, d.Uniform(-1, 1) * 0.4);
}

TEST(HsvTest, GreyPixelsOnlyChangeValue) {
  HsvGains g;
  g.enabled = true;
  g.h = 0.015, g.s = 0.7, g.v = 0.2;
  const HsvLut lut = MakeHsvLut(g);
  cv::Mat img(4, 4, CV_8UC3, cv::Scalar(114, 114, 114));
  ApplyHsvReference(lut, &img);
  EXPECT_EQ(img.at<cv::Vec3b>(0, 0), cv::Vec3b(136, 136, 136));  // floor(114 * 1.2)
  std::vector<uint8_t> px(3, 114), hsv(3);
  ApplyHsv(lut, px.data(), px.data(), 1, hsv.data());
  EXPECT_EQ(px[0], 136);
  EXPECT_EQ(px[1], 136);
}

TEST(HsvTest, FastPathMatchesCvtColorBaselineWithinOneLevel) {
  // Every 24-bit colour class is exercised through random pixels and many random gains.
  cv::Mat img(256, 512, CV_8UC3);
  cv::randu(img, 0, 256);
  AugmentHyp h;
  std::vector<uint8_t> hsv(kHsvChunkPixels * 3);
  for (int trial = 0; trial < 30; ++trial) {
    Rng rng(11, 0, trial);
    HsvGains g = DrawHsvGains(rng, h);
    if (trial % 5 == 0) g.h = rng.Uniform(-1, 1) * 0.5, g.s = rng.Uniform(-1, 1), g.v = rng.Uniform(-1, 1);
    const HsvLut lut = MakeHsvLut(g);
    cv::Mat expected = img.clone();
    ApplyHsvReference(lut, &expected);
    cv::Mat got = img.clone();
    ApplyHsv(lut, got.data, got.data, got.total(), hsv.data());
    const auto d = testing::CompareImages(expected, got);
    EXPECT_LE(d.max_abs, 1) << "trial " << trial;
  }
}

TEST(HsvTest, ArithmeticLutsReproduceTheTables) {
  // The fused kernel replaces the three table lookups by arithmetic when that is exact (checked
  // per LUT); both variants must give identical bytes.
  cv::Mat img(64, 64, CV_8UC3);
  cv::randu(img, 0, 256);
  std::vector<uint8_t> scratch(kHsvChunkPixels * 6);
  int arithmetic = 0;
  for (int trial = 0; trial < 50; ++trial) {
    Rng rng(21, 0, trial);
    const HsvLut lut = MakeHsvLut(DrawHsvGains(rng, AugmentHyp()));
    arithmetic += lut.arithmetic;
    HsvLut gathered = lut;
    gathered.arithmetic = false;
    cv::Mat a = img.clone(), b = img.clone();
    ApplyHsv(lut, a.data, a.data, a.total(), scratch.data());
    ApplyHsv(gathered, b.data, b.data, b.total(), scratch.data());
    EXPECT_EQ(testing::CompareImages(a, b).max_abs, 0) << "trial " << trial;
  }
  EXPECT_GT(arithmetic, 45);  // nearly every LUT takes the fast variant
}

TEST(HsvTest, PlanarAndInterleavedAgreeInPlaceAndAtEveryLength) {
  HsvGains g;
  g.enabled = true, g.h = -0.013, g.s = 0.55, g.v = -0.25;
  const HsvLut lut = MakeHsvLut(g);
  std::vector<uint8_t> scratch(kHsvChunkPixels * 6);
  for (int pass = 0; pass < 2; ++pass) {
    const testing::ScopedNoSimd no_simd(pass == 1);  // pass 1: the portable cvtColor path
    for (size_t n : {1u, 7u, 8u, 17u, 18u, 19u, 33u, 1000u, 5000u}) {
      cv::Mat img(1, static_cast<int>(n), CV_8UC3);
      cv::randu(img, 0, 256);
      cv::Mat expected = img.clone();
      ApplyHsvReference(lut, &expected);
      std::vector<uint8_t> out(n * 3), r(n), gg(n), b(n);
      ApplyHsv(lut, img.data, out.data(), n, scratch.data());
      cv::Mat inplace = img.clone();
      ApplyHsv(lut, inplace.data, inplace.data, n, scratch.data());
      ApplyHsvToPlanes(lut, img.data, n, r.data(), gg.data(), b.data(), scratch.data());
      for (size_t i = 0; i < n; ++i) {
        for (int c = 0; c < 3; ++c) {
          ASSERT_EQ(inplace.data[3 * i + c], out[3 * i + c]) << "n " << n << " pixel " << i;
          ASSERT_LE(std::abs(int(out[3 * i + c]) - int(expected.data[3 * i + c])), 1) << "n " << n << " pixel " << i;
        }
        ASSERT_EQ(r[i], out[3 * i]);
        ASSERT_EQ(gg[i], out[3 * i + 1]);
        ASSERT_EQ(b[i], out[3 * i + 2]);
      }
    }
  }
}

TEST(HsvTest, AvxTwoAndAvx512KernelsGiveTheScalarFormsBytes) {
  // Random pixels with runs of the warp's 114 fill (the AVX-512 loop writes whole fill blocks from
  // one precomputed grey), at lengths around the 16-pixel step, in place and into planes.
  std::vector<uint8_t> scratch(kHsvChunkPixels * 6);
  Rng pixels_rng(31, 0, 0);
  for (int trial = 0; trial < 24; ++trial) {
    Rng rng(41, 0, trial);
    HsvGains g = DrawHsvGains(rng, AugmentHyp());
    if (trial % 4 == 3) g.h = rng.Uniform(-1, 1) * 0.5, g.s = rng.Uniform(-1, 1), g.v = rng.Uniform(-1, 1);
    HsvLut lut = MakeHsvLut(g);
    if (trial % 6 == 5) lut.arithmetic = false;  // the gathered-LUT variant
    for (size_t n : {1u, 15u, 16u, 17u, 31u, 48u, 100u, 2048u}) {
      std::vector<uint8_t> src(n * 3);
      for (size_t i = 0; i < n; ++i) {
        const bool fill = (i / 20) % 2 == 1;  // alternating 20-pixel runs: some blocks all fill
        for (int c = 0; c < 3; ++c) src[3 * i + c] = fill ? 114 : static_cast<uint8_t>(pixels_rng.NextU64());
      }
      std::vector<uint8_t> expected(n * 3);
      hsv_kernel::InterleavedScalar(lut, hsv_kernel::Tables(), src.data(), expected.data(), n);
      for (SimdLevel level : {SimdLevel::kAvx2, SimdLevel::kAvx512}) {
        const testing::ScopedSimdCap cap(level);
        if (ActiveSimdLevel() != level) {
          std::printf("[  NOTE    ] this CPU has no %s: that kernel is not checked here\n", SimdLevelName(level));
          continue;
        }
        std::vector<uint8_t> inplace = src, r(n), gg(n), b(n);
        ApplyHsv(lut, inplace.data(), inplace.data(), n, scratch.data());
        ApplyHsvToPlanes(lut, src.data(), n, r.data(), gg.data(), b.data(), scratch.data());
        for (size_t i = 0; i < n; ++i) {
          for (int c = 0; c < 3; ++c)
            ASSERT_EQ(inplace[3 * i + c], expected[3 * i + c]) << SimdLevelName(level) << " n " << n << " px " << i;
          ASSERT_EQ(r[i], expected[3 * i]) << SimdLevelName(level) << " n " << n << " px " << i;
          ASSERT_EQ(gg[i], expected[3 * i + 1]) << SimdLevelName(level) << " n " << n << " px " << i;
          ASSERT_EQ(b[i], expected[3 * i + 2]) << SimdLevelName(level) << " n " << n << " px " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace yc
