// train_batch{N}.jpg and val_batch{0,1,2}_labels.jpg / _pred.jpg as Ultralytics' plot_images draws
// them (ultralytics/utils/plotting.py): up to 16 images of a loader batch (training: the augmented
// mosaics the model sees; validation: the letterboxed val images) in a square grid filled column by
// column, scaled to at most max_size px, each with its source file name and its boxes. The boxes and
// their labels are drawn on the scaled grid, so they stay readable whatever the image size: the label
// is the class name, or the class id where the images are too small for names (tiles under 200 px);
// predictions are drawn above confidence 0.25 with "name 0.9", as plot_images' conf_thres.
//
//   cv::Mat grid = RenderBatchGrid(batch, names);   // on the loop thread: copies the pixels
//   writer.Submit([grid, path] { return WriteImageFile(path, grid); });
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "loader/batch.h"

namespace yc::trainer {

// A box to draw on image `image` of the batch, in that image's pixels (xyxy). conf < 0: a label.
struct GridBox {
  int image = 0;
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int cls = 0;
  float conf = -1;
};

// The batch's own labels.
cv::Mat RenderBatchGrid(const Batch& batch, const std::vector<std::string>& names, int max_size = 1920);
// `boxes` instead of the labels (validation predictions: NMS rows in letterboxed pixels).
cv::Mat RenderBatchGrid(const Batch& batch, const std::vector<std::string>& names, const std::vector<GridBox>& boxes,
                        int max_size = 1920);

// Whether training batch `ni` (counted over the whole run, nb batches an epoch) is drawn as
// train_batch{ni}.jpg: Ultralytics' plot_idx (ultralytics/engine/trainer.py): the first three of the run
// (not drawn again by a resumed run) and the first three after close_mosaic turns mosaic off.
bool IsPlottedTrainBatch(int64_t ni, int epochs, int close_mosaic, int64_t nb, bool resumed);

// The batch's labels (normalised xywh rows) as GridBoxes in pixels.
std::vector<GridBox> BatchLabelBoxes(const Batch& batch);

// The text drawn on a box: the name (or the id when `ids`), with the confidence to one decimal for a prediction.
std::string GridBoxLabel(const GridBox& box, const std::vector<std::string>& names, bool ids);

}  // namespace yc::trainer
