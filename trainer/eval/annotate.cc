#include "trainer/eval/annotate.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "loader/measure/draw.h"
#include "loader/ops/letterbox.h"

namespace yc::trainer {
namespace {

// Python's int() of a float pixel coordinate (toward zero), bounded first so that a far-off value
// cannot overflow the conversion.
int PixelInt(float v) { return static_cast<int>(std::clamp(static_cast<double>(v), -1e9, 1e9)); }

// One box and its label, with box_label's geometry (OpenCV path).
void BoxLabel(const Detection& d, const std::string& label, int lw, cv::Mat* im) {
  const cv::Scalar color = ClassColor(d.cls);
  cv::Point p1(PixelInt(d.x1), PixelInt(d.y1));
  cv::rectangle(*im, p1, cv::Point(PixelInt(d.x2), PixelInt(d.y2)), color, lw, cv::LINE_AA);
  if (label.empty()) return;
  const int tf = std::max(lw - 1, 1);      // font thickness
  const double sf = lw / 3.0;               // font scale
  int baseline = 0;
  cv::Size text = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, sf, tf, &baseline);
  text.height += 3;                         // padding around the text
  const bool outside = p1.y >= text.height;  // room above the box
  if (p1.x > im->cols - text.width) p1.x = im->cols - text.width;
  const cv::Point p2(p1.x + text.width, outside ? p1.y - text.height : p1.y + text.height);
  cv::rectangle(*im, p1, p2, color, cv::FILLED, cv::LINE_AA);
  cv::putText(*im, label, cv::Point(p1.x, outside ? p1.y - 2 : p1.y + text.height - 1), cv::FONT_HERSHEY_SIMPLEX, sf,
              cv::Scalar(255, 255, 255), tf, cv::LINE_AA);
}

}  // namespace

int AnnotatorLineWidth(int line_width, int height, int width) {
  if (line_width > 0) return line_width;
  return std::max(static_cast<int>(PyRound((height + width + 3) / 2.0 * 0.003)), 2);
}

std::string BoxLabelText(const Detection& d, const std::vector<std::string>& names, bool show_labels, bool show_conf) {
  if (!show_labels) return "";
  if (show_conf) return DetectionLabel(d, names);
  return d.cls >= 0 && static_cast<size_t>(d.cls) < names.size() ? names[static_cast<size_t>(d.cls)] : std::to_string(d.cls);
}

void DrawDetections(const std::vector<Detection>& dets, const std::vector<std::string>& names,
                    const PredictOptions& o, cv::Mat* rgb) {
  if (!o.show_boxes) return;
  const int lw = AnnotatorLineWidth(o.line_width, rgb->rows, rgb->cols);
  for (auto it = dets.rbegin(); it != dets.rend(); ++it) {
    if (!std::isfinite(it->x1) || !std::isfinite(it->y1) || !std::isfinite(it->x2) || !std::isfinite(it->y2)) continue;
    BoxLabel(*it, BoxLabelText(*it, names, o.show_labels, o.show_conf), lw, rgb);
  }
}

}  // namespace yc::trainer
