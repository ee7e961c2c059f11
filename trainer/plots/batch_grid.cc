#include "trainer/plots/batch_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <opencv2/imgproc.hpp>

#include "loader/measure/draw.h"  // ClassColor
#include "loader/ops/collate.h"   // kLabelColumns

namespace yc::trainer {

namespace {

constexpr float kConfThreshold = 0.25f;  // plot_images' conf_thres for predictions
constexpr int kMinNamedTile = 200;       // tiles smaller than this (px) get class ids, not names

// Image i of the batch as an RGB cv::Mat (a copy; either layout).
cv::Mat BatchImage(const Batch& batch, int i) {
  cv::Mat out(batch.height, batch.width, CV_8UC3);
  const uint8_t* src = batch.image(i);
  if (batch.layout == ImageLayout::kNHWC) {
    std::copy(src, src + batch.image_bytes(), out.data);
    return out;
  }
  const size_t plane = static_cast<size_t>(batch.height) * batch.width;
  std::vector<cv::Mat> planes;
  for (int c = 0; c < 3; ++c) planes.emplace_back(batch.height, batch.width, CV_8UC1, const_cast<uint8_t*>(src + c * plane));
  cv::merge(planes, out);
  return out;
}

int Clamp(double v, int hi) { return static_cast<int>(std::lround(std::clamp(v, -1.0, static_cast<double>(hi) + 1))); }

}  // namespace

bool IsPlottedTrainBatch(int64_t ni, int epochs, int close_mosaic, int64_t nb, bool resumed) {
  if (ni < 3 && !resumed) return true;
  if (close_mosaic <= 0) return false;
  const int64_t base = static_cast<int64_t>(epochs - close_mosaic) * nb;
  return base > 0 && ni >= base && ni < base + 3;
}

std::vector<GridBox> BatchLabelBoxes(const Batch& batch) {
  std::vector<GridBox> out;
  for (size_t r = 0; r < batch.label_count(); ++r) {
    const float* row = &batch.labels[r * kLabelColumns];
    if (!std::isfinite(row[0]) || !std::isfinite(row[1])) continue;
    const float cx = row[2] * batch.width, cy = row[3] * batch.height;
    const float w = row[4] * batch.width, h = row[5] * batch.height;
    out.push_back({static_cast<int>(row[0]), cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, static_cast<int>(row[1]), -1});
  }
  return out;
}

std::string GridBoxLabel(const GridBox& b, const std::vector<std::string>& names, bool ids) {
  std::string text = !ids && b.cls >= 0 && static_cast<size_t>(b.cls) < names.size() ? names[static_cast<size_t>(b.cls)]
                                                                                      : std::to_string(b.cls);
  if (b.conf >= 0) {
    char conf[16];
    std::snprintf(conf, sizeof conf, " %.1f", b.conf);
    text += conf;
  }
  return text;
}

cv::Mat RenderBatchGrid(const Batch& batch, const std::vector<std::string>& names, int max_size) {
  return RenderBatchGrid(batch, names, BatchLabelBoxes(batch), max_size);
}

cv::Mat RenderBatchGrid(const Batch& batch, const std::vector<std::string>& names, const std::vector<GridBox>& boxes,
                        int max_size) {
  const int n = std::min(batch.size, 16);
  if (n <= 0 || batch.width <= 0 || batch.height <= 0) return {};
  const int ns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const double scale = std::min(1.0, static_cast<double>(max_size) / ns / std::max(batch.width, batch.height));
  const int tw = static_cast<int>(std::ceil(batch.width * scale)), th = static_cast<int>(std::ceil(batch.height * scale));
  cv::Mat grid(ns * th, ns * tw, CV_8UC3, cv::Scalar(255, 255, 255));
  auto cell = [&](int i) { return cv::Rect((i / ns) * tw, (i % ns) * th, tw, th); };  // column by column
  for (int i = 0; i < n; ++i) {
    cv::Mat tile = BatchImage(batch, i);
    if (scale < 1.0) cv::resize(tile, tile, cv::Size(tw, th), 0, 0, cv::INTER_AREA);
    tile.copyTo(grid(cell(i)));
  }
  // Text and lines sized for the scaled tile, never below what is readable (HERSHEY_SIMPLEX at 0.35 is
  // about 8 px high).
  const int side = std::min(tw, th);
  const bool ids = side < kMinNamedTile;
  const double font = std::clamp(side / 640.0, 0.35, 1.0);
  const int thickness = std::max(1, static_cast<int>(std::lround(side / 320.0)));
  for (const GridBox& b : boxes) {
    if (b.image < 0 || b.image >= n || (b.conf >= 0 && !(b.conf > kConfThreshold))) continue;
    if (!std::isfinite(b.x1) || !std::isfinite(b.y1) || !std::isfinite(b.x2) || !std::isfinite(b.y2)) continue;
    const cv::Rect c = cell(b.image);
    const cv::Point p1(c.x + Clamp(b.x1 * scale, tw), c.y + Clamp(b.y1 * scale, th));
    const cv::Point p2(c.x + Clamp(b.x2 * scale, tw), c.y + Clamp(b.y2 * scale, th));
    const cv::Scalar color = ClassColor(b.cls);
    cv::rectangle(grid, p1, p2, color, thickness, cv::LINE_AA);
    const std::string label = GridBoxLabel(b, names, ids);
    int baseline = 0;
    const cv::Size text = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font, 1, &baseline);
    // Above the box when it fits inside the grid, else inside it; kept inside the grid on the right.
    const int top = p1.y - text.height - baseline >= 0 ? p1.y - text.height - baseline : p1.y;
    const int left = std::max(0, std::min(p1.x, grid.cols - text.width));
    cv::rectangle(grid, cv::Point(left, top), cv::Point(left + text.width, top + text.height + baseline), color, cv::FILLED);
    cv::putText(grid, label, cv::Point(left, top + text.height), cv::FONT_HERSHEY_SIMPLEX, font, cv::Scalar(255, 255, 255),
                1, cv::LINE_AA);
  }
  for (int i = 0; i < n; ++i) {
    const cv::Rect c = cell(i);
    cv::rectangle(grid, c, cv::Scalar(255, 255, 255), 2);
    if (static_cast<size_t>(i) < batch.samples.size()) {
      const std::string file = std::filesystem::path(batch.samples[static_cast<size_t>(i)].source).filename().string().substr(0, 40);
      cv::putText(grid, file, {c.x + 5, c.y + 5 + static_cast<int>(22 * font)}, cv::FONT_HERSHEY_SIMPLEX, font,
                  cv::Scalar(220, 220, 220), 1, cv::LINE_AA);
    }
  }
  return grid;
}

}  // namespace yc::trainer
