// LetterBox (`ultralytics/data/augment.py`): Python rounding, padding split, scaleup, boxes.
#include "loader/ops/letterbox.h"

#include <gtest/gtest.h>

#include "loader/ops/load_image.h"

namespace yc {
namespace {

TEST(LetterboxTest, PyRoundIsHalfToEven) {
  EXPECT_EQ(PyRound(0.5), 0);
  EXPECT_EQ(PyRound(1.5), 2);
  EXPECT_EQ(PyRound(2.5), 2);
  EXPECT_EQ(PyRound(3.5), 4);
  EXPECT_EQ(PyRound(-0.5), 0);
  EXPECT_EQ(PyRound(-1.5), -2);
  EXPECT_EQ(PyRound(2.4999), 2);
  EXPECT_EQ(PyRound(2.5001), 3);
  EXPECT_EQ(PyRound(79.4), 79);
}

TEST(LetterboxTest, LandscapeIntoSquare) {
  const LetterboxGeometry g = ComputeLetterbox(480, 640, 640, 640, true);
  EXPECT_DOUBLE_EQ(g.r, 1.0);
  EXPECT_EQ(g.new_w, 640);
  EXPECT_EQ(g.new_h, 480);
  EXPECT_EQ(g.top, 80);  // dh = 80: round(79.9) = 80, round(80.1) = 80
  EXPECT_EQ(g.bottom, 80);
  EXPECT_EQ(g.left, 0);
  EXPECT_EQ(g.right, 0);
}

TEST(LetterboxTest, OddPaddingGoesToBottomRight) {
  const LetterboxGeometry g = ComputeLetterbox(481, 640, 640, 640, true);
  EXPECT_EQ(g.new_h, 481);
  EXPECT_EQ(g.top, 79);  // dh = 79.5: round(79.4) = 79, round(79.6) = 80
  EXPECT_EQ(g.bottom, 80);
  EXPECT_EQ(g.out_h(), 640);
}

TEST(LetterboxTest, UnpaddedSizeRoundsHalfToEven) {
  // 4x2 (w x h) into h=3, w=5: r = min(3/2, 5/4) = 1.25, h*r = 2.5 -> 2 (Python), w*r = 5.
  LetterboxGeometry g = ComputeLetterbox(2, 4, 3, 5, true);
  EXPECT_EQ(g.new_w, 5);
  EXPECT_EQ(g.new_h, 2);
  EXPECT_EQ(g.top, 0);  // dh = 0.5: round(0.4) = 0, round(0.6) = 1
  EXPECT_EQ(g.bottom, 1);
  // into h=4, w=7: r = 1.75, h*r = 3.5 -> 4 (even).
  g = ComputeLetterbox(2, 4, 4, 7, true);
  EXPECT_EQ(g.new_h, 4);
  EXPECT_EQ(g.new_w, 7);
  EXPECT_EQ(g.top + g.bottom, 0);
}

TEST(LetterboxTest, ScaleupFalseNeverEnlarges) {
  LetterboxGeometry g = ComputeLetterbox(100, 200, 640, 640, false);
  EXPECT_DOUBLE_EQ(g.r, 1.0);
  EXPECT_EQ(g.new_w, 200);
  EXPECT_EQ(g.left, 220);
  EXPECT_EQ(g.right, 220);
  EXPECT_EQ(g.top, 270);
  g = ComputeLetterbox(100, 200, 640, 640, true);
  EXPECT_DOUBLE_EQ(g.r, 3.2);
  EXPECT_EQ(g.new_w, 640);
  EXPECT_EQ(g.new_h, 320);
  // scaleup=False still shrinks.
  g = ComputeLetterbox(800, 400, 640, 640, false);
  EXPECT_DOUBLE_EQ(g.r, 0.8);
  EXPECT_EQ(g.new_h, 640);
  EXPECT_EQ(g.new_w, 320);
}

TEST(LetterboxTest, BoxesScaleAndShift) {
  const LetterboxGeometry g = ComputeLetterbox(100, 200, 640, 640, true);  // r 3.2, top 160
  std::vector<BoxXyxy> boxes = {{10, 10, 20, 30, 5}};
  LetterboxBoxes(g, &boxes);
  EXPECT_FLOAT_EQ(boxes[0].x1, 32);
  EXPECT_FLOAT_EQ(boxes[0].y1, 32 + 160);
  EXPECT_FLOAT_EQ(boxes[0].x2, 64);
  EXPECT_FLOAT_EQ(boxes[0].y2, 96 + 160);
}

TEST(LetterboxTest, ImagePaddingIs114) {
  cv::Mat in(2, 4, CV_8UC3, cv::Scalar(10, 20, 30));
  const LetterboxGeometry g = ComputeLetterbox(2, 4, 4, 4, false);
  cv::Mat out;
  LetterboxImage(in, g, &out);
  ASSERT_EQ(out.size(), cv::Size(4, 4));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 0), cv::Vec3b(114, 114, 114));
  EXPECT_EQ(out.at<cv::Vec3b>(1, 0), cv::Vec3b(10, 20, 30));
  EXPECT_EQ(out.at<cv::Vec3b>(3, 3), cv::Vec3b(114, 114, 114));
}

TEST(LoadImageTest, LongSideBecomesImgszWithCeil) {
  EXPECT_EQ(LoadedImageSize(480, 640, 640), cv::Size(640, 480));  // r = 1: untouched
  EXPECT_EQ(LoadedImageSize(10, 10, 640), cv::Size(640, 640));    // upscaled
  EXPECT_EQ(LoadedImageSize(1, 1000, 640), cv::Size(640, 1));     // ceil(0.64) = 1
  EXPECT_EQ(LoadedImageSize(333, 500, 640), cv::Size(640, 427));  // ceil(426.24)
  EXPECT_EQ(LoadedImageSize(1000, 3, 640), cv::Size(2, 640));     // ceil(1.92)
}

}  // namespace
}  // namespace yc
