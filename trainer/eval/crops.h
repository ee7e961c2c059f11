// `predict save_crop=True`: each detection cut out of the original image and saved as
// <run>/crops/<class name>/<stem>.jpg, as Ultralytics' Results.save_crop with save_one_box
// (ultralytics/utils/plotting.py): the box's width and height times 1.02 plus 10 pixels about its
// centre, truncated to integers, clipped to the image; a name already taken gets <stem>2.jpg,
// <stem>3.jpg ... (increment_path); JPEG quality 95 with full-resolution chroma (4:4:4), as it saves them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "base/status.h"
#include "trainer/eval/predictor.h"

namespace yc::trainer {

// save_one_box's crop of `d` in a width x height image: x1, y1, x2, y2 (x2, y2 exclusive), possibly empty.
cv::Rect CropRect(const Detection& d, int width, int height);

// Writes every non-empty crop of `detections` from `rgb` (the original image, unannotated) below
// <save_dir>/crops/, named after `stem`, in detection order; a class name that is not a plain file name
// (empty, ".", "..", or holding a '/') is written under its class id. Refuses paths a link would lead
// outside `save_dir`, and every file goes through a temp file + rename (libcache/base/output_file.h).
Status SaveCrops(const std::vector<Detection>& detections, const std::vector<std::string>& names, const cv::Mat& rgb,
                 const std::filesystem::path& save_dir, const std::string& stem);

}  // namespace yc::trainer
