// Reading the records one train sample needs (1 or 4 tiles, twice with mixup) and the per-thread
// scratch both image paths reuse, so the steady state allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "libcache/record_source.h"
#include "loader/base/geometry.h"
#include "loader/kernels/canvas_warp.h"
#include "loader/render/plan.h"

namespace yc {

// The loaded images and boxes of one SubPlan: tile 0 is the sample itself.
struct SubInputs {
  int count = 0;                  // 1 (letterbox) or 4 (mosaic)
  std::array<cv::Mat, 4> images;  // loaded: long side = imgsz (read-only views or resize scratch)
  std::array<const Box*, 4> boxes{};
  std::array<size_t, 4> box_counts{};
};

// Everything a worker thread reuses from sample to sample.
struct RenderScratch {
  std::array<ScratchBuffer, 8> read;  // record decompression buffers
  std::array<cv::Mat, 8> resized;     // load_image resizes
  std::array<RecordView, 8> views;
  cv::Mat letterboxed;          // letterbox resize (fast path) / letterboxed image (reference)
  cv::Mat canvas, warped, mix;  // reference path; `mix` also holds the MixUp / CutMix partner's image
  cv::Mat image;                // fast path output when it cannot go straight into the batch
  std::vector<uint8_t> chunk;   // FinishImage runs
  CanvasWarpScratch warp;       // fast path tile warps
  std::vector<BoxXyxy> boxes_out, boxes_mix, boxes_scratch;
  // The last sample's stage times (Loader::stats): geometry + warp (or letterbox), then HSV + layout
  // (with the label rows and SampleInfo, so the two cover the whole sample).
  double render_seconds = 0, finish_seconds = 0;
};

// Reads and loads the records of `plan` into slots [base, base + 4) of the scratch.
// Errors name the record index (and its source path when known).
Status ReadSubInputs(const RecordSource& source, const SubPlan& plan, int imgsz, int base, RenderScratch* scratch,
                     SubInputs* inputs);

// "record 12 (images/a.jpg)" for messages.
std::string RecordName(uint64_t index, const RecordView* view);

}  // namespace yc
