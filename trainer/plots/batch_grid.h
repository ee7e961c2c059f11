// train_batch0.jpg .. train_batch2.jpg as Ultralytics' plot_images draws them at the start of training:
// up to 16 images of a loader batch (the augmented mosaics the model sees) in a square grid, each with
// its label boxes and class names and its source file name, scaled to at most 1920 px.
//
//   cv::Mat grid = RenderBatchGrid(batch, names);   // on the loop thread: copies the pixels
//   writer.Submit([grid, path] { return WriteImageFile(path, grid); });
#pragma once

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "loader/batch.h"

namespace yc::trainer {

cv::Mat RenderBatchGrid(const Batch& batch, const std::vector<std::string>& names, int max_size = 1920);

}  // namespace yc::trainer
