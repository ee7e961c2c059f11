// One collated batch as the consumer (trainer, bench, tools) sees it: Ultralytics' collate_fn output
// (`ultralytics/data/dataset.py` YOLODataset.collate_fn), image tensor from the loader's BufferAllocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loader/options.h"

namespace yc {

struct SampleInfo {
  uint64_t record = 0;         // index in the RecordSource
  int orig_h = 0, orig_w = 0;  // source image size (ori_shape)
  // val: the image's size inside the letterboxed output, before padding; train: load_image size.
  int resized_h = 0, resized_w = 0;
  // ratio_pad = ((ratio_h, ratio_w), (pad_w, pad_h)): resized / orig, and the letterbox's left/top
  // padding (val); maps predictions back to the source image. Train samples have no padding.
  float ratio_h = 1, ratio_w = 1;
  float pad_w = 0, pad_h = 0;
  std::string source;  // image path relative to the dataset root
};

// What a model's kernels are chosen by: a batch's image count and size.
struct BatchShape {
  int size = 0, height = 0, width = 0;
  bool operator==(const BatchShape& o) const { return size == o.size && height == o.height && width == o.width; }
};

struct Batch {
  // size x 3 x height x width (NCHW) or size x height x width x 3 (NHWC), uint8 RGB, contiguous.
  uint8_t* images = nullptr;
  int size = 0;               // images in this batch (the last one may be short)
  int height = 0, width = 0;  // this batch's image size (val rect batches differ)
  ImageLayout layout = ImageLayout::kNCHW;
  // Rows of 6 floats: (batch_idx, cls, cx, cy, w, h), xywh normalised by (width, height).
  std::vector<float> labels;
  std::vector<SampleInfo> samples;  // one per image
  int epoch = 0;
  size_t index = 0;  // batch index within the epoch (this rank)

  size_t label_count() const { return labels.size() / 6; }
  size_t image_bytes() const { return static_cast<size_t>(height) * width * 3; }
  size_t bytes() const { return image_bytes() * static_cast<size_t>(size); }
  const uint8_t* image(int i) const { return images + image_bytes() * static_cast<size_t>(i); }
};

}  // namespace yc
