#include "loader/ops/collate.h"

#include <algorithm>
#include <cstring>
#include <opencv2/core.hpp>

#include "loader/ops/channel_order.h"

namespace yc {

void AppendLabelRows(float batch_idx, const std::vector<BoxXyxy>& boxes, int w, int h, std::vector<float>* labels) {
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  for (const BoxXyxy& b : boxes) {
    labels->push_back(batch_idx);
    labels->push_back(static_cast<float>(b.cls));
    labels->push_back((b.x1 + b.x2) * 0.5f / fw);
    labels->push_back((b.y1 + b.y2) * 0.5f / fh);
    labels->push_back((b.x2 - b.x1) / fw);
    labels->push_back((b.y2 - b.y1) / fh);
  }
}

void FinishImage(const uint8_t* hwc, int h, int w, size_t stride, const HsvLut* lut, ImageLayout layout, uint8_t* slot,
                 std::vector<uint8_t>* chunk, bool bgr) {
  const size_t row_bytes = static_cast<size_t>(w) * 3;
  const int rows_per_chunk = std::max<int>(1, static_cast<int>(kHsvChunkPixels / static_cast<size_t>(w)));
  const size_t run_bytes = static_cast<size_t>(rows_per_chunk) * row_bytes;
  const size_t hsv_bytes = kHsvChunkPixels * 6;  // ApplyHsv / ApplyHsvToPlanes scratch
  if (chunk->size() < run_bytes + hsv_bytes) chunk->resize(run_bytes + hsv_bytes);
  uint8_t* rgb_buf = chunk->data();
  uint8_t* hsv_buf = chunk->data() + run_bytes;
  const size_t plane = static_cast<size_t>(h) * w;
  const bool contiguous = stride == row_bytes;
  // NCHW: BGR is the red and blue planes written in each other's place, at no cost.
  uint8_t* const planes_at[3] = {slot + (bgr ? 2 : 0) * plane, slot + plane, slot + (bgr ? 0 : 2) * plane};

  for (int y0 = 0; y0 < h; y0 += rows_per_chunk) {
    const int rows = std::min(rows_per_chunk, h - y0);
    const size_t pixels = static_cast<size_t>(rows) * w;
    // A contiguous run of `rows` rows: in place when the source is contiguous, else gathered.
    const uint8_t* run = hwc + static_cast<size_t>(y0) * stride;
    if (!contiguous) {
      for (int y = 0; y < rows; ++y)
        std::memcpy(rgb_buf + static_cast<size_t>(y) * row_bytes, hwc + static_cast<size_t>(y0 + y) * stride,
                    row_bytes);
      run = rgb_buf;
    }
    if (layout == ImageLayout::kNHWC) {
      uint8_t* dst = slot + static_cast<size_t>(y0) * row_bytes;
      if (lut != nullptr)
        ApplyHsv(*lut, run, dst, pixels, hsv_buf);
      else if (run != dst)
        std::memcpy(dst, run, pixels * 3);
      if (bgr) SwapRedBlue(dst, pixels);  // on the run just written, while it is in L1
      continue;
    }
    const size_t offset = static_cast<size_t>(y0) * w;
    if (lut != nullptr) {
      ApplyHsvToPlanes(*lut, run, pixels, planes_at[0] + offset, planes_at[1] + offset, planes_at[2] + offset, hsv_buf);
      continue;
    }
    const cv::Mat in(rows, w, CV_8UC3, const_cast<uint8_t*>(run));
    cv::Mat planes[3] = {cv::Mat(rows, w, CV_8UC1, planes_at[0] + offset), cv::Mat(rows, w, CV_8UC1, planes_at[1] + offset),
                         cv::Mat(rows, w, CV_8UC1, planes_at[2] + offset)};
    cv::split(in, planes);
  }
}

}  // namespace yc
