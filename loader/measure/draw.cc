#include "loader/measure/draw.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <opencv2/imgproc.hpp>

#include "loader/ops/collate.h"

namespace yc {

cv::Scalar ClassColor(int cls) {
  // Golden-ratio hue steps give neighbouring ids distinct colours. In double, so that any id,
  // INT_MIN included, has a magnitude (negating it as an int would overflow).
  const double hue = std::fmod(0.61803398875 * std::fabs(static_cast<double>(cls)), 1.0);
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue * 180, 200, 255)), rgb;
  cv::cvtColor(hsv, rgb, cv::COLOR_HSV2RGB);
  const cv::Vec3b c = rgb.at<cv::Vec3b>(0, 0);
  return cv::Scalar(c[0], c[1], c[2]);
}

namespace {

// A pixel coordinate as an int. Far-off values are clamped first (converting an out-of-range float
// to int is undefined); a margin of one image size keeps every clipped rectangle's visible edges.
int PixelCoord(float v, int size) {
  const double margin = 2.0 * std::max(size, 1);
  return static_cast<int>(std::lround(std::clamp(static_cast<double>(v), -margin, margin)));
}

// A label column (batch index, class id: integers carried as float) as an int32 without UB: float
// ids beyond the int32 range (2^31 and up, as float(INT_MAX) is) saturate; NaN becomes -1.
int32_t LabelInt(float v) {
  if (std::isnan(v)) return -1;
  constexpr double kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(std::clamp(static_cast<double>(v), kMin, kMax));
}

}  // namespace

void DrawBoxes(const std::vector<BoxXyxy>& boxes, const std::vector<std::string>& names, cv::Mat* rgb,
               const std::vector<std::string>* box_labels) {
  const int thickness = std::max(1, static_cast<int>(std::lround(std::min(rgb->rows, rgb->cols) / 320.0)));
  const double font_scale = 0.4 * thickness;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxXyxy& b = boxes[i];
    if (!std::isfinite(b.x1) || !std::isfinite(b.y1) || !std::isfinite(b.x2) || !std::isfinite(b.y2)) continue;
    const cv::Scalar color = ClassColor(b.cls);
    const cv::Point p1(PixelCoord(b.x1, rgb->cols), PixelCoord(b.y1, rgb->rows));
    const cv::Point p2(PixelCoord(b.x2, rgb->cols), PixelCoord(b.y2, rgb->rows));
    cv::rectangle(*rgb, p1, p2, color, thickness, cv::LINE_AA);
    const std::string label = box_labels != nullptr && i < box_labels->size() ? (*box_labels)[i]
                              : b.cls >= 0 && static_cast<size_t>(b.cls) < names.size() ? names[b.cls]
                                                                                       : std::to_string(b.cls);
    int baseline = 0;
    const cv::Size text = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font_scale, 1, &baseline);
    // Label box above the rectangle, or inside it when the rectangle touches the top; shifted left when
    // it would run off the right edge (so "name 0.87" stays readable, as Ultralytics' labels do).
    const int top = p1.y - text.height - baseline >= 0 ? p1.y - text.height - baseline : p1.y;
    const int left = std::max(0, std::min(p1.x, rgb->cols - text.width));
    cv::rectangle(*rgb, cv::Point(left, top), cv::Point(left + text.width, top + text.height + baseline), color,
                  cv::FILLED);
    cv::putText(*rgb, label, cv::Point(left, top + text.height), cv::FONT_HERSHEY_SIMPLEX, font_scale,
                cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
  }
}

cv::Mat RenderBatchImage(const Batch& batch, int index, const std::vector<std::string>& names) {
  cv::Mat out(batch.height, batch.width, CV_8UC3);
  const uint8_t* src = batch.image(index);
  if (batch.layout == ImageLayout::kNHWC) {
    std::copy(src, src + batch.image_bytes(), out.data);
  } else {
    const size_t plane = static_cast<size_t>(batch.height) * batch.width;
    std::vector<cv::Mat> planes;
    for (int c = 0; c < 3; ++c)
      planes.emplace_back(batch.height, batch.width, CV_8UC1, const_cast<uint8_t*>(src + c * plane));
    cv::merge(planes, out);
  }
  std::vector<BoxXyxy> boxes;
  for (size_t r = 0; r < batch.label_count(); ++r) {
    const float* row = &batch.labels[r * kLabelColumns];
    if (LabelInt(row[0]) != index) continue;
    const float cx = row[2] * batch.width, cy = row[3] * batch.height;
    const float w = row[4] * batch.width, h = row[5] * batch.height;
    boxes.push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, LabelInt(row[1])});
  }
  DrawBoxes(boxes, names, &out);
  return out;
}

}  // namespace yc
