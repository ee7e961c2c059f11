// predict's pictures and crops as Ultralytics draws and cuts them (trainer/eval/annotate.h, crops.h):
// the Annotator's default line width, the label texts of show_labels / show_conf, show_boxes, and
// save_one_box's crop rectangle with its gain and padding.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "trainer/eval/annotate.h"
#include "trainer/eval/crops.h"

namespace yc::trainer {
namespace {

Detection Det(float x1, float y1, float x2, float y2, float conf, int cls) {
  Detection d;
  d.x1 = x1, d.y1 = y1, d.x2 = x2, d.y2 = y2, d.conf = conf, d.cls = cls;
  return d;
}

TEST(PredictDrawing, LineWidthIsUltralyticsDefaultForTheImageUnlessGiven) {
  // max(round((h + w + 3) / 2 * 0.003), 2): 640x480 -> 1.68 -> 2; 1920x1080 -> 4.5045 -> 5; 4000x3000 -> 10.5045 -> 11.
  EXPECT_EQ(AnnotatorLineWidth(0, 480, 640), 2);
  EXPECT_EQ(AnnotatorLineWidth(0, 1080, 1920), 5);
  EXPECT_EQ(AnnotatorLineWidth(0, 3000, 4000), 11);
  EXPECT_EQ(AnnotatorLineWidth(0, 64, 64), 2);  // never below 2
  EXPECT_EQ(AnnotatorLineWidth(7, 64, 64), 7);
}

TEST(PredictDrawing, LabelTextFollowsShowLabelsAndShowConf) {
  const std::vector<std::string> names = {"person", "car"};
  const Detection d = Det(0, 0, 10, 10, 0.876f, 1);
  EXPECT_EQ(BoxLabelText(d, names, true, true), "car 0.88");
  EXPECT_EQ(BoxLabelText(d, names, true, false), "car");
  EXPECT_EQ(BoxLabelText(d, names, false, true), "");
}

// Whether any pixel of `roi` differs from the grey background.
bool Drawn(const cv::Mat& im, const cv::Rect& roi) {
  cv::Mat diff;
  cv::absdiff(im(roi), cv::Scalar(128, 128, 128), diff);
  return cv::countNonZero(diff.reshape(1)) > 0;
}

TEST(PredictDrawing, BoxesLabelsAndNothingAsAsked) {
  const std::vector<Detection> dets = {Det(20, 40, 60, 80, 0.9f, 0)};
  const std::vector<std::string> names = {"person"};
  const cv::Rect edge(18, 58, 5, 5), label(22, 28, 10, 8), inside(30, 50, 20, 20);
  PredictOptions o;
  cv::Mat im(100, 100, CV_8UC3, cv::Scalar(128, 128, 128));
  DrawDetections(dets, names, o, &im);
  EXPECT_TRUE(Drawn(im, edge));    // the box's left edge
  EXPECT_TRUE(Drawn(im, label));   // the label above it (there is room: y1 40 >= text height)
  EXPECT_FALSE(Drawn(im, inside));
  o.show_labels = false;
  im.setTo(cv::Scalar(128, 128, 128));
  DrawDetections(dets, names, o, &im);
  EXPECT_TRUE(Drawn(im, edge));
  EXPECT_FALSE(Drawn(im, label));
  o.show_boxes = false;
  im.setTo(cv::Scalar(128, 128, 128));
  DrawDetections(dets, names, o, &im);
  EXPECT_FALSE(Drawn(im, cv::Rect(0, 0, 100, 100)));
  // A thicker line reaches further out from the edge.
  o.show_boxes = true;
  o.line_width = 9;
  im.setTo(cv::Scalar(128, 128, 128));
  DrawDetections(dets, names, o, &im);
  EXPECT_TRUE(Drawn(im, cv::Rect(16, 60, 1, 1)));
}

TEST(PredictCrops, RectangleIsSaveOneBoxsGainAndPadClippedToTheImage) {
  // xc 30.3, w 39.8 * 1.02 + 10 = 50.596 -> x 5.002 .. 55.598 -> [5, 55); yc 50.75, h 60.3 * 1.02 + 10 = 71.506
  // -> y 14.997 .. 86.503 -> [14, 86).
  EXPECT_EQ(CropRect(Det(10.4f, 20.6f, 50.2f, 80.9f, 0.5f, 0), 100, 100), cv::Rect(5, 14, 50, 72));
  // Past the borders: clipped to the image (y 25 -+ 30.5: -5.5 truncates to -5, clipped to 0; 55.5 to 55).
  EXPECT_EQ(CropRect(Det(0, 0, 100, 50, 0.5f, 0), 100, 60), cv::Rect(0, 0, 100, 55));
  EXPECT_EQ(CropRect(Det(0, 0, 0, 0, 0.5f, 0), 4, 4), cv::Rect(0, 0, 4, 4));  // a point still gets its pad
}

}  // namespace
}  // namespace yc::trainer
