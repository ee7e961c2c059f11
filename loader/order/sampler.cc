#include "loader/order/sampler.h"

#include <algorithm>
#include <numeric>

#include "loader/base/rng.h"
#include "loader/order/window_deal.h"

namespace yc {

namespace {

// Records in index order, every batch imgsz x imgsz: batches without rect.
RectBatches SquareBatches(size_t n, int batch, int imgsz) {
  RectBatches r;
  r.order.resize(n);
  std::iota(r.order.begin(), r.order.end(), size_t{0});
  r.shapes.assign((n + batch - 1) / batch, cv::Size(imgsz, imgsz));
  return r;
}

}  // namespace

EpochSampler::EpochSampler(size_t n, const LoaderOptions& o, const std::vector<cv::Size>& sizes,
                           std::vector<RecordBlock> blocks)
    : n_(n), options_(o) {
  const size_t B = static_cast<size_t>(o.batch), W = static_cast<size_t>(o.world_size);
  if (o.mode == LoaderMode::kTrain && o.train_rect) {
    InitTrainRect(sizes);
    return;
  }
  if (o.mode == LoaderMode::kTrain) {
    local_size_ = (n + W - 1) / W;
    batches_ = o.drop_last ? local_size_ / B : (local_size_ + B - 1) / B;
    max_shape_ = cv::Size(o.imgsz, o.imgsz);
    if (o.order == SampleOrder::kWindowed) {
      blocks_ = std::move(blocks);
      if (blocks_.empty() && n > 0) blocks_.push_back({0, static_cast<uint32_t>(n), 0});  // one window
      windows_ = DealWindows(MakeWindowedEpoch(blocks_, o, 0), W, static_cast<size_t>(o.rank));
      return;
    }
    permutation_.resize(n);
    std::iota(permutation_.begin(), permutation_.end(), 0u);
    return;
  }
  rect_ = o.rect && sizes.size() == n ? ComputeRectBatches(sizes, o.batch, o.imgsz, o.stride, o.pad)
                                      : SquareBatches(n, o.batch, o.imgsz);
  const size_t nb = rect_.shapes.size();
  const size_t per_rank = (nb + W - 1) / W;
  first_global_batch_ = std::min(nb, per_rank * static_cast<size_t>(o.rank));
  batches_ = std::min(nb, first_global_batch_ + per_rank) - first_global_batch_;
  max_shape_ = cv::Size(0, 0);
  for (const cv::Size& s : rect_.shapes)
    max_shape_ = cv::Size(std::max(max_shape_.width, s.width), std::max(max_shape_.height, s.height));
}

// Ultralytics' rect train batches (set_rectangle, with build_yolo_dataset's train pad 0) over this
// rank's batch size, as its per-rank dataset computes them. The global batches are padded to a multiple
// of world_size by repeating from the first (DistributedSampler's padding, whole batches at a time) and
// rank r takes global batches r, r + W, ...: every rank gets the same number of batches, each of one shape.
void EpochSampler::InitTrainRect(const std::vector<cv::Size>& sizes) {
  const LoaderOptions& o = options_;
  constexpr double kTrainPad = 0.0;
  rect_ = sizes.size() == n_ ? ComputeRectBatches(sizes, o.batch, o.imgsz, o.stride, kTrainPad)
                             : SquareBatches(n_, o.batch, o.imgsz);
  size_t nb = rect_.shapes.size();
  if (o.drop_last && n_ % static_cast<size_t>(o.batch) != 0) --nb;  // the short last batch
  rect_.shapes.resize(nb);
  const size_t W = static_cast<size_t>(o.world_size);
  batches_ = (nb + W - 1) / W;
  max_shape_ = cv::Size(0, 0);
  for (const cv::Size& s : rect_.shapes)
    max_shape_ = cv::Size(std::max(max_shape_.width, s.width), std::max(max_shape_.height, s.height));
}

void EpochSampler::SetEpoch(int epoch) {
  if (options_.mode != LoaderMode::kTrain || options_.train_rect) return;  // rect: the same order every epoch
  if (options_.order == SampleOrder::kWindowed) {
    windows_ = DealWindows(MakeWindowedEpoch(blocks_, options_, epoch), static_cast<size_t>(options_.world_size),
                           static_cast<size_t>(options_.rank));
    return;
  }
  std::iota(permutation_.begin(), permutation_.end(), 0u);
  if (!options_.shuffle) return;
  Rng rng(options_.seed, static_cast<uint64_t>(epoch), 0, RngStream::kPermutation);
  for (size_t i = n_; i > 1; --i) std::swap(permutation_[i - 1], permutation_[rng.Below(i)]);
}

void EpochSampler::Batch(size_t b, std::vector<SampleSlot>* samples, cv::Size* shape) const {
  samples->clear();
  const size_t B = static_cast<size_t>(options_.batch);
  if (options_.mode == LoaderMode::kTrain && options_.train_rect) {
    const size_t padded = b * static_cast<size_t>(options_.world_size) + static_cast<size_t>(options_.rank);
    const size_t gb = padded % rect_.shapes.size();
    const size_t begin = gb * B, end = std::min(n_, begin + B);
    // The position in the padded epoch keys the sample: a repeated batch is augmented anew.
    for (size_t k = begin; k < end; ++k) samples->push_back({rect_.order[k], padded * B + (k - begin)});
    *shape = rect_.shapes[gb];
    return;
  }
  if (options_.mode == LoaderMode::kTrain) {
    const size_t W = static_cast<size_t>(options_.world_size), r = static_cast<size_t>(options_.rank);
    const size_t begin = b * B, end = std::min(local_size_, begin + B);
    if (windows_) {  // this rank's dealt windows (window_deal.h): local position j is global first + j
      const size_t first = RankShareStart(n_, W, r);
      for (size_t j = begin; j < end; ++j)
        samples->push_back({windows_->records[j], first + j, windows_->WindowOf(j)});
      *shape = max_shape_;
      return;
    }
    for (size_t j = begin; j < end; ++j) {
      const size_t p = j * W + r;
      samples->push_back({permutation_[p % n_], p});
    }
    *shape = max_shape_;
    return;
  }
  const size_t gb = first_global_batch_ + b;
  const size_t begin = gb * B, end = std::min(n_, begin + B);
  for (size_t k = begin; k < end; ++k) samples->push_back({rect_.order[k], k});
  *shape = rect_.shapes[gb];
}

// Batch()'s count and shape without listing the samples.
BatchShape EpochSampler::ShapeOf(size_t b) const {
  const size_t B = static_cast<size_t>(options_.batch);
  size_t begin = 0, end = 0;
  cv::Size shape = max_shape_;
  if (options_.mode == LoaderMode::kTrain && options_.train_rect) {
    const size_t gb = (b * static_cast<size_t>(options_.world_size) + static_cast<size_t>(options_.rank)) %
                      rect_.shapes.size();
    begin = gb * B, end = std::min(n_, begin + B), shape = rect_.shapes[gb];
  } else if (options_.mode == LoaderMode::kTrain) {
    begin = b * B, end = std::min(local_size_, begin + B);
  } else {
    const size_t gb = first_global_batch_ + b;
    begin = gb * B, end = std::min(n_, begin + B), shape = rect_.shapes[gb];
  }
  return {static_cast<int>(end - begin), shape.height, shape.width};
}

std::vector<BatchShape> EpochSampler::DistinctShapes() const {
  std::vector<BatchShape> shapes;
  for (size_t b = 0; b < batches_; ++b) {
    const BatchShape s = ShapeOf(b);
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  }
  return shapes;
}

}  // namespace yc
