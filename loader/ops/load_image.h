// Ultralytics' load_image (`ultralytics/data/base.py` BaseDataset.load_image): every image enters augmentation
// resized so that its long side is imgsz, aspect kept, size rounded up (ceil) and capped at imgsz, INTER_LINEAR.
// Cached records are normally stored at exactly that size already; then the record's pixels are used in place.
#pragma once

#include <opencv2/core.hpp>

#include "base/status.h"
#include "libcache/record_source.h"

namespace yc {

// (width, height) that load_image gives an h x w image.
cv::Size LoadedImageSize(int height, int width, int imgsz);

// Wraps the record's pixels (no copy) or, when its size differs from LoadedImageSize, resizes them
// into *scratch (reused across calls). *out is read-only; it aliases the record or the scratch.
// Fails with DataError / Unsupported for records that are not non-empty 3-channel images; the
// message gives the reason only, callers prefix the record's name.
Status LoadImage(const RecordView& record, int imgsz, cv::Mat* scratch, cv::Mat* out);

// Checks a record's fields (pixels present, positive size, 3 channels, boxes present if counted).
Status CheckRecordImage(const RecordView& record);

}  // namespace yc
