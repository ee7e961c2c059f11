// Ultralytics Format + collate (`ultralytics/data/augment.py` Format, `ultralytics/data/dataset.py`
// YOLODataset.collate_fn): uint8 RGB images (NCHW or NHWC), rows (batch_idx, cls, cx, cy, w, h) normalised to 0..1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loader/base/geometry.h"
#include "loader/ops/hsv.h"
#include "loader/options.h"

namespace yc {

constexpr int kLabelColumns = 6;

// Appends one label row per box, normalised by (w, h).
void AppendLabelRows(float batch_idx, const std::vector<BoxXyxy>& boxes, int w, int h, std::vector<float>* labels);

// Bytes one image occupies in a batch: 3 * h * w in both layouts.
inline size_t ImageBytes(int h, int w) { return static_cast<size_t>(h) * w * 3; }

// Copies an h x w HWC RGB image (row stride `stride` bytes) into a batch slot in `layout`, applying
// the HSV tables on the way when `lut` is not null, and writing the channels in BGR order when `bgr`
// (loader/ops/channel_order.h). Works in L1-sized runs of rows; `chunk` is scratch, grown on first use
// and reused. In NHWC `hwc` may be the slot itself (in place).
void FinishImage(const uint8_t* hwc, int h, int w, size_t stride, const HsvLut* lut, ImageLayout layout, uint8_t* slot,
                 std::vector<uint8_t>* chunk, bool bgr = false);

}  // namespace yc
