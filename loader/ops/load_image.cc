#include "loader/ops/load_image.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <string>

namespace yc {

cv::Size LoadedImageSize(int height, int width, int imgsz) {
  const double r = static_cast<double>(imgsz) / std::max(height, width);
  if (r == 1.0) return {width, height};
  const int w = std::min(static_cast<int>(std::ceil(width * r)), imgsz);
  const int h = std::min(static_cast<int>(std::ceil(height * r)), imgsz);
  return {std::max(w, 1), std::max(h, 1)};
}

Status CheckRecordImage(const RecordView& record) {
  if (record.pixels == nullptr || record.height <= 0 || record.width <= 0)
    return Status::DataError("empty image (" + std::to_string(record.height) + "x" + std::to_string(record.width) +
                             ")");
  if (record.channels != 3)
    return Status::Unsupported(std::to_string(record.channels) + " channels; the loader needs 3 (RGB)");
  if (record.box_count > 0 && record.boxes == nullptr) return Status::DataError("box count without boxes");
  return Status::OK();
}

Status LoadImage(const RecordView& record, int imgsz, cv::Mat* scratch, cv::Mat* out) {
  YC_RETURN_IF_ERROR(CheckRecordImage(record));
  // OpenCV wants a non-const pointer; the loader never writes through this header.
  const cv::Mat src(record.height, record.width, CV_8UC3, const_cast<uint8_t*>(record.pixels),
                    static_cast<size_t>(record.width) * 3);
  const cv::Size size = LoadedImageSize(record.height, record.width, imgsz);
  if (size == src.size()) {
    *out = src;
    return Status::OK();
  }
  cv::resize(src, *scratch, size, 0, 0, cv::INTER_LINEAR);
  *out = *scratch;
  return Status::OK();
}

}  // namespace yc
