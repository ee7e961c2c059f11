// Which records make up each batch of an epoch, for one rank.
//
// Train: the epoch's permutation (Fisher-Yates keyed by (seed, epoch), or the identity without
// shuffle) is padded to a multiple of world_size by repeating from its start, like PyTorch's
// DistributedSampler; rank r takes global positions r, r + W, r + 2W, ... Local batch b holds local
// samples [b*B, (b+1)*B). A sample's global position keys its random stream, so each sample is the
// same whatever the rank count or thread count.
//
// Train, windowed order (options.order, loader/order/window_order.h): the epoch's WindowedEpoch::records,
// padded the same way, but dealt to the ranks in contiguous runs (loader/order/window_deal.h): rank r
// takes global positions [r L, (r + 1) L), L = ceil(n / W), so each rank walks (and reads, or fetches)
// only its own windows; each sample also carries its window among the rank's. One rank: the epoch's
// order as it is.
//
// Train, rect (options.train_rect): Ultralytics' rect batches (aspect-ratio order, a shape per batch,
// no shuffle); rank r takes whole global batches r, r + W, ..., padded by repeating from the first.
//
// Val: no shuffle; with rect the records are ordered by aspect ratio and batched as Ultralytics does
// (each batch has its own shape); ranks take contiguous runs of whole batches (no padding, so no
// image is scored twice).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <opencv2/core.hpp>
#include <vector>

#include "loader/batch.h"
#include "loader/options.h"
#include "loader/order/rect_batches.h"
#include "loader/order/window_order.h"

namespace yc {

struct SampleSlot {
  uint64_t record = 0;    // index into the RecordSource
  uint64_t position = 0;  // global position in the epoch (RNG key)
  uint32_t window = 0;    // windowed order: its window among this rank's (EpochSampler::windows())
};

class EpochSampler {
 public:
  // `sizes` (width, height per record) is needed only for rect batches (UsesRectBatches); `blocks`
  // (SplitIntoBlocks) only for the windowed train order.
  EpochSampler(size_t dataset_size, const LoaderOptions& options, const std::vector<cv::Size>& sizes,
               std::vector<RecordBlock> blocks = {});

  size_t batches_per_epoch() const { return batches_; }
  // Largest batch shape (rect batches) or imgsz x imgsz.
  cv::Size max_shape() const { return max_shape_; }

  // Computes the epoch's order (train shuffle). Call before Batch() for a new epoch.
  void SetEpoch(int epoch);
  // The samples of local batch `b` and its (width, height).
  void Batch(size_t b, std::vector<SampleSlot>* samples, cv::Size* shape) const;
  // Each distinct shape among this rank's batches of an epoch, in order of first appearance (the same every
  // epoch): the full batch and a short last one, or Ultralytics' rect shapes.
  std::vector<BatchShape> DistinctShapes() const;
  // Windowed order: this rank's windows of the current epoch (SampleSlot::window indexes them), shared so that
  // batches of this epoch still in flight keep them when SetEpoch moves on; null for kShuffle and val.
  std::shared_ptr<const WindowedEpoch> windows() const { return windows_; }

 private:
  void InitTrainRect(const std::vector<cv::Size>& sizes);
  BatchShape ShapeOf(size_t b) const;

  size_t n_;
  LoaderOptions options_;
  size_t local_size_ = 0;  // train: samples this rank sees per epoch
  size_t batches_ = 0;
  size_t first_global_batch_ = 0;  // val: this rank's first global batch
  cv::Size max_shape_;
  RectBatches rect_;                   // val, train_rect
  std::vector<uint32_t> permutation_;  // train, kShuffle
  std::vector<RecordBlock> blocks_;    // train, kWindowed
  std::shared_ptr<const WindowedEpoch> windows_;
};

}  // namespace yc
