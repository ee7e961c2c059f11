// The val sample: load_image, then LetterBox(shape, scaleup=False, centre) into the batch's shape (rect batch
// shape or imgsz x imgsz), no augmentation (`ultralytics/data/dataset.py` YOLODataset.build_transforms).
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "libcache/record_source.h"
#include "loader/base/geometry.h"
#include "loader/ops/letterbox.h"
#include "loader/render/inputs.h"

namespace yc {

struct ValSample {
  LetterboxGeometry letterbox;
  cv::Size loaded;  // load_image size (w, h)
};

// Renders record `index` letterboxed into `out` (CV_8UC3 of the batch shape, allocated by the caller)
// and its boxes (output pixels, xyxy) into *boxes.
Status RenderVal(const RecordSource& source, uint64_t index, int imgsz, RenderScratch* scratch, cv::Mat* out,
                 std::vector<BoxXyxy>* boxes, ValSample* info);

}  // namespace yc
