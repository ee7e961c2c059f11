// Preview overlays.
#include "loader/measure/draw.h"

#include <limits>

#include <gtest/gtest.h>

namespace yc {
namespace {

TEST(DrawTest, BoxesAndNamesChangeThePixelsAroundTheBox) {
  cv::Mat img(100, 100, CV_8UC3, cv::Scalar::all(0));
  DrawBoxes({{20, 30, 80, 90, 2}}, {"a", "b", "car"}, &img);
  EXPECT_NE(img.at<cv::Vec3b>(60, 20), cv::Vec3b(0, 0, 0));  // left edge
  EXPECT_NE(img.at<cv::Vec3b>(90, 50), cv::Vec3b(0, 0, 0));  // bottom edge
  EXPECT_EQ(img.at<cv::Vec3b>(60, 50), cv::Vec3b(0, 0, 0));  // inside untouched
  EXPECT_NE(img.at<cv::Vec3b>(25, 22), cv::Vec3b(0, 0, 0));  // label above the box
  EXPECT_NE(ClassColor(0), ClassColor(1));
}

TEST(DrawTest, BatchImageInBothLayouts) {
  Batch b;
  std::vector<uint8_t> data(2 * 3 * 8 * 8, 0);
  b.images = data.data();
  b.size = 2, b.height = 8, b.width = 8;
  b.layout = ImageLayout::kNCHW;
  data[3 * 64 + 64] = 200;  // image 1, channel 1, pixel 0
  b.labels = {1, 0, 0.5f, 0.5f, 0.5f, 0.5f};
  cv::Mat img = RenderBatchImage(b, 1, {});
  EXPECT_EQ(img.size(), cv::Size(8, 8));
  EXPECT_EQ(img.at<cv::Vec3b>(0, 0)[1], 200);
  EXPECT_NE(img.at<cv::Vec3b>(2, 2), cv::Vec3b(0, 0, 0));  // the box corner
  cv::Mat none = RenderBatchImage(b, 0, {});
  EXPECT_EQ(cv::countNonZero(none.reshape(1)), 0);  // label of image 1 not drawn on image 0
}

// Any class id and any coordinates draw without UB (run under UBSan in CI): ids come from records and
// label rows, which a hostile cache or a bug could fill with INT_MIN or absurd values.
TEST(DrawTest, AnyClassIdAndCoordinateIsSafe) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  for (int32_t cls : {kMin, kMin + 1, -1, 0, 3, kMax}) {
    const cv::Scalar c = ClassColor(cls);
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(c[k] >= 0 && c[k] <= 255) << cls;
  }
  EXPECT_EQ(ClassColor(kMin + 1), ClassColor(kMax));  // same magnitude, same colour
  cv::Mat img(40, 40, CV_8UC3, cv::Scalar::all(0));
  const float big = 3e38f, nan = std::numeric_limits<float>::quiet_NaN();
  DrawBoxes({{5, 5, 30, 30, kMin}, {-big, -big, big, big, kMax}, {nan, 0, 1, 1, 0}, {1e9f, 1e9f, 2e9f, 2e9f, 1}},
            {"a"}, &img);
  EXPECT_NE(img.at<cv::Vec3b>(20, 5), cv::Vec3b(0, 0, 0));  // the INT_MIN box is drawn, labelled by its id

  Batch b;
  std::vector<uint8_t> data(3 * 8 * 8, 0);
  b.images = data.data();
  b.size = 1, b.height = 8, b.width = 8;
  b.layout = ImageLayout::kNHWC;
  b.labels = {0, 2147483648.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0, -3e9f, 0.5f, 0.5f, 0.5f, 0.5f, nan, 1, 0.5f, 0.5f, 0.5f, 0.5f};
  const cv::Mat out = RenderBatchImage(b, 0, {"a"});
  EXPECT_EQ(out.size(), cv::Size(8, 8));
}

}  // namespace
}  // namespace yc
