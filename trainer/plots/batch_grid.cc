#include "trainer/plots/batch_grid.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <opencv2/imgproc.hpp>

#include "loader/measure/draw.h"

namespace yc::trainer {

cv::Mat RenderBatchGrid(const Batch& batch, const std::vector<std::string>& names, int max_size) {
  const int n = std::min(batch.size, 16);
  if (n <= 0 || batch.width <= 0 || batch.height <= 0) return {};
  const int ns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const double scale = std::min(1.0, static_cast<double>(max_size) / ns / std::max(batch.width, batch.height));
  const int tw = static_cast<int>(std::ceil(batch.width * scale)), th = static_cast<int>(std::ceil(batch.height * scale));
  cv::Mat grid(ns * th, ns * tw, CV_8UC3, cv::Scalar(255, 255, 255));
  const double font = std::max(0.3, std::min(tw, th) / 640.0 * 0.8);
  for (int i = 0; i < n; ++i) {
    cv::Mat tile = RenderBatchImage(batch, i, names);
    if (scale < 1.0) cv::resize(tile, tile, cv::Size(tw, th), 0, 0, cv::INTER_AREA);
    const cv::Rect cell((i % ns) * tw, (i / ns) * th, tw, th);
    tile.copyTo(grid(cell));
    cv::rectangle(grid, cell, cv::Scalar(255, 255, 255), 2);
    if (static_cast<size_t>(i) < batch.samples.size()) {
      const std::string file = std::filesystem::path(batch.samples[static_cast<size_t>(i)].source).filename().string().substr(0, 40);
      cv::putText(grid, file, {cell.x + 5, cell.y + static_cast<int>(18 * font / 0.5)}, cv::FONT_HERSHEY_SIMPLEX, font,
                  cv::Scalar(220, 220, 220), 1, cv::LINE_AA);
    }
  }
  return grid;
}

}  // namespace yc::trainer
