// One labelled object as stored in a cache record: class id + normalised centre/size (YOLO xywhn),
// relative to the stored (resized) image, which keeps the source's aspect ratio, so the numbers are
// the same as in the source label file (polygon rows already reduced to their bounding box).
#pragma once

#include <cstdint>

namespace yc {

struct Box {
  int32_t cls = 0;
  float cx = 0, cy = 0, w = 0, h = 0;
};
static_assert(sizeof(Box) == 20, "Box is part of the on-disk record format");

}  // namespace yc
