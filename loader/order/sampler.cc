#include "loader/order/sampler.h"

#include <algorithm>
#include <numeric>

#include "loader/base/rng.h"

namespace yc {

EpochSampler::EpochSampler(size_t n, const LoaderOptions& o, const std::vector<cv::Size>& sizes,
                           std::vector<RecordBlock> blocks)
    : n_(n), options_(o) {
  const size_t B = static_cast<size_t>(o.batch), W = static_cast<size_t>(o.world_size);
  if (o.mode == LoaderMode::kTrain) {
    local_size_ = (n + W - 1) / W;
    batches_ = o.drop_last ? local_size_ / B : (local_size_ + B - 1) / B;
    max_shape_ = cv::Size(o.imgsz, o.imgsz);
    if (o.order == SampleOrder::kWindowed) {
      blocks_ = std::move(blocks);
      if (blocks_.empty() && n > 0) blocks_.push_back({0, static_cast<uint32_t>(n), 0});  // one window
      windows_ = MakeWindowedEpoch(blocks_, o, 0);
      return;
    }
    permutation_.resize(n);
    std::iota(permutation_.begin(), permutation_.end(), 0u);
    return;
  }
  if (o.rect && sizes.size() == n) {
    rect_ = ComputeRectBatches(sizes, o.batch, o.imgsz, o.stride, o.pad);
  } else {
    rect_.order.resize(n);
    std::iota(rect_.order.begin(), rect_.order.end(), size_t{0});
    rect_.shapes.assign((n + B - 1) / B, cv::Size(o.imgsz, o.imgsz));
  }
  const size_t nb = rect_.shapes.size();
  const size_t per_rank = (nb + W - 1) / W;
  first_global_batch_ = std::min(nb, per_rank * static_cast<size_t>(o.rank));
  batches_ = std::min(nb, first_global_batch_ + per_rank) - first_global_batch_;
  max_shape_ = cv::Size(0, 0);
  for (const cv::Size& s : rect_.shapes)
    max_shape_ = cv::Size(std::max(max_shape_.width, s.width), std::max(max_shape_.height, s.height));
}

void EpochSampler::SetEpoch(int epoch) {
  if (options_.mode != LoaderMode::kTrain) return;
  if (options_.order == SampleOrder::kWindowed) {
    windows_ = MakeWindowedEpoch(blocks_, options_, epoch);
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
  if (options_.mode == LoaderMode::kTrain) {
    const size_t W = static_cast<size_t>(options_.world_size), r = static_cast<size_t>(options_.rank);
    const size_t begin = b * B, end = std::min(local_size_, begin + B);
    for (size_t j = begin; j < end; ++j) {
      const size_t p = j * W + r;
      if (windows_) {
        samples->push_back({windows_->records[p % n_], p, windows_->WindowOf(p % n_)});
      } else {
        samples->push_back({permutation_[p % n_], p});
      }
    }
    *shape = max_shape_;
    return;
  }
  const size_t gb = first_global_batch_ + b;
  const size_t begin = gb * B, end = std::min(n_, begin + B);
  for (size_t k = begin; k < end; ++k) samples->push_back({rect_.order[k], k});
  *shape = rect_.shapes[gb];
}

}  // namespace yc
