// Ultralytics' rectangular val batches (`ultralytics/data/base.py` BaseDataset.set_rectangle): images sorted
// by aspect ratio h/w; batch i gets shape factors [max_ar, 1] when all its ratios are < 1, [1, 1/min_ar] when
// all are > 1, else [1, 1]; its size is ceil(factor * imgsz / stride + pad) * stride.
#pragma once

#include <cstddef>
#include <opencv2/core.hpp>
#include <vector>

namespace yc {

struct RectBatches {
  std::vector<size_t> order;     // record index of each sorted position
  std::vector<cv::Size> shapes;  // (width, height) of each batch
};

// `sizes` holds each image's (width, height). Ties in aspect ratio keep index order (stable sort;
// NumPy's argsort is not stable, so the order among equal ratios may differ from Ultralytics').
RectBatches ComputeRectBatches(const std::vector<cv::Size>& sizes, int batch, int imgsz, int stride, double pad);

}  // namespace yc
