// Preview overlays.
#include "loader/draw.h"

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

}  // namespace
}  // namespace yc
