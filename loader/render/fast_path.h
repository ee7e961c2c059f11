// The fast train path: each tile is warped straight from the record's pixels into the s x s output
// with its mosaic placement, the affine/perspective matrix and the flips composed into one
// transform (see canvas_warp.h); the 2s x 2s canvas is never built. HSV and the channel order (bgr)
// are left to FinishImage, which applies them while writing the batch.
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "libcache/record_source.h"
#include "loader/options.h"
#include "loader/render/inputs.h"
#include "loader/render/plan.h"

namespace yc {

// Renders the sample's geometry, mixup, cutmix and flips into `out` (CV_8UC3 of the batch's shape:
// imgsz x imgsz or a rect batch's; allocated by the caller; may wrap batch memory) and its boxes
// (output pixels, xyxy) into *boxes.
Status RenderTrainFast(const TrainPlan& plan, const RecordSource& source, const LoaderOptions& options,
                       RenderScratch* scratch, cv::Mat* out, std::vector<BoxXyxy>* boxes);

}  // namespace yc
