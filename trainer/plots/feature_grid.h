// The picture of one layer's feature maps that Ultralytics' feature_visualization saves
// (ultralytics/utils/plotting.py, called by predict visualize=True): the first channels (up to 32) in a
// grid of 8 columns, each drawn as matplotlib's imshow draws a 2-D array by default (viridis, scaled from
// the map's own minimum to its maximum, axes off), in a 6.4 x 4.8 inch figure at 300 dpi after its
// tight_layout, cropped as savefig(bbox_inches="tight") crops (0.1 inch of white around the maps).
//
//   std::vector<cv::Mat> maps = ...;          // CV_32FC1, all of one size
//   YC_RETURN_IF_ERROR(WriteImageFile(dir / "stage0_Conv_features.png", FeatureMapGrid(maps)));
#pragma once

#include <vector>

#include <opencv2/core.hpp>

namespace yc::trainer {

// Matplotlib's viridis colour of `index` (0..255) as RGB (OpenCV's COLORMAP_VIRIDIS is that table).
cv::Vec3b Viridis(int index);

// The grid picture (CV_8UC3 RGB) of 1..32 maps (CV_32FC1, one size); empty for no maps.
cv::Mat FeatureMapGrid(const std::vector<cv::Mat>& maps);

}  // namespace yc::trainer
