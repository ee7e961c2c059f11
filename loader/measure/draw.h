// Box overlays for `yolocache inspect --preview` and `--export-augmented`: rectangles and class
// names drawn on an RGB image with OpenCV imgproc (no imgcodecs: the caller encodes the result).
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "loader/base/geometry.h"
#include "loader/batch.h"

namespace yc {

// A stable, distinct colour (RGB) per class id.
cv::Scalar ClassColor(int cls);

// Draws each box (pixel xyxy) with its class name (names[cls], or the id when out of range) on
// `rgb` (CV_8UC3, modified in place). Boxes partly outside the image are clipped by OpenCV.
// `box_labels`, when given (one per box), is drawn instead of the class name (predict: "person 0.87").
void DrawBoxes(const std::vector<BoxXyxy>& boxes, const std::vector<std::string>& names, cv::Mat* rgb,
               const std::vector<std::string>* box_labels = nullptr);

// Image `index` of a batch as an HWC RGB cv::Mat (a copy, either layout) with its labels drawn.
cv::Mat RenderBatchImage(const Batch& batch, int index, const std::vector<std::string>& names);

}  // namespace yc
