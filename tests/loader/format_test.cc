// Format/collate (`ultralytics/data/augment.py` Format, `ultralytics/data/dataset.py` collate_fn): rows, layouts.
#include "loader/ops/collate.h"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>

namespace yc {
namespace {

TEST(FormatTest, LabelRowsAreNormalisedXywhWithBatchIndex) {
  std::vector<float> labels;
  AppendLabelRows(3, {{64, 32, 192, 96, 7}}, 640, 320, &labels);
  ASSERT_EQ(labels.size(), 6u);
  EXPECT_FLOAT_EQ(labels[0], 3);
  EXPECT_FLOAT_EQ(labels[1], 7);
  EXPECT_FLOAT_EQ(labels[2], 0.2f);  // cx 128 / 640
  EXPECT_FLOAT_EQ(labels[3], 0.2f);  // cy 64 / 320
  EXPECT_FLOAT_EQ(labels[4], 0.2f);  // w 128 / 640
  EXPECT_FLOAT_EQ(labels[5], 0.2f);  // h 64 / 320
  AppendLabelRows(0, {}, 640, 320, &labels);
  EXPECT_EQ(labels.size(), 6u);
}

TEST(FormatTest, NchwAndNhwcCarryTheSameImage) {
  cv::Mat img(37, 53, CV_8UC3);  // odd sizes: runs do not divide evenly
  cv::randu(img, 0, 256);
  std::vector<uint8_t> nchw(ImageBytes(37, 53)), nhwc(ImageBytes(37, 53)), chunk;
  FinishImage(img.data, 37, 53, img.step, nullptr, ImageLayout::kNCHW, nchw.data(), &chunk);
  FinishImage(img.data, 37, 53, img.step, nullptr, ImageLayout::kNHWC, nhwc.data(), &chunk);
  const size_t plane = 37 * 53;
  for (size_t p = 0; p < plane; ++p)
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(nhwc[p * 3 + c], img.data[p * 3 + c]);
      ASSERT_EQ(nchw[c * plane + p], img.data[p * 3 + c]);
    }
}

TEST(FormatTest, StridedSourceAndHsvInBothLayouts) {
  cv::Mat big(40, 80, CV_8UC3);
  cv::randu(big, 0, 256);
  const cv::Mat img = big(cv::Rect(5, 3, 61, 30));  // not contiguous
  HsvGains g;
  g.enabled = true, g.h = 0.01, g.s = 0.3, g.v = -0.2;
  const HsvLut lut = MakeHsvLut(g);
  cv::Mat expected = img.clone();
  std::vector<uint8_t> hsv(kHsvChunkPixels * 3);
  ApplyHsv(lut, expected.data, expected.data, expected.total(), hsv.data());
  std::vector<uint8_t> nchw(ImageBytes(30, 61)), nhwc(ImageBytes(30, 61)), chunk;
  FinishImage(img.data, 30, 61, img.step, &lut, ImageLayout::kNCHW, nchw.data(), &chunk);
  FinishImage(img.data, 30, 61, img.step, &lut, ImageLayout::kNHWC, nhwc.data(), &chunk);
  const size_t plane = 30 * 61;
  for (size_t p = 0; p < plane; ++p)
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(nhwc[p * 3 + c], expected.data[p * 3 + c]);
      ASSERT_EQ(nchw[c * plane + p], expected.data[p * 3 + c]);
    }
}

}  // namespace
}  // namespace yc
