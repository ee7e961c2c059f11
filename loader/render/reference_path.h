// The reference train path: Ultralytics' operations one after another on real intermediate images
// (2s x 2s mosaic canvas, cv::warpAffine of the canvas, cvtColor-based HSV, cv::flip). Slow by
// design; tests and `bench --compare` hold the fast path against it.
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "libcache/record_source.h"
#include "loader/options.h"
#include "loader/render/inputs.h"
#include "loader/render/plan.h"

namespace yc {

// Renders the complete sample (geometry, mixup, cutmix, HSV, flips, then the channel order: BGR when
// plan.bgr) into *out (RGB of `shape` (w, h): imgsz x imgsz, or a rect batch's shape) and its boxes
// (output pixels, xyxy) into *boxes.
Status RenderTrainReference(const TrainPlan& plan, const RecordSource& source, const LoaderOptions& options,
                            cv::Size shape, RenderScratch* scratch, cv::Mat* out, std::vector<BoxXyxy>* boxes);

}  // namespace yc
