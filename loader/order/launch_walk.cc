#include "loader/order/launch_walk.h"

namespace yc {

LaunchWalk::LaunchWalk(const LoaderOptions* options, const EpochSampler& sampler)
    : options_(options), sampler_(sampler) {}

void LaunchWalk::Restart(int epoch, size_t first_batch) {
  epoch_ = epoch;
  batch_ = first_batch;
  in_batch_ = 0;
  samples_.clear();
  over_ = sampler_.batches_per_epoch() == 0;
  sampler_.SetEpoch(epoch_);
  if (batch_ < sampler_.batches_per_epoch()) {
    cv::Size shape;
    sampler_.Batch(batch_, &samples_, &shape);
  }
}

bool LaunchWalk::Next(SampleSlot* sample, int* epoch) {
  while (!over_ && in_batch_ >= samples_.size()) {
    // The batch is walked: on to the next, into the next epoch as Loader's Schedule does.
    if (batch_ + 1 < sampler_.batches_per_epoch()) {
      ++batch_;
    } else if (options_->mode == LoaderMode::kTrain && epoch_ + 1 < options_->epochs) {
      sampler_.SetEpoch(++epoch_);
      batch_ = 0;
    } else {
      over_ = true;
      break;
    }
    cv::Size shape;
    sampler_.Batch(batch_, &samples_, &shape);
    in_batch_ = 0;
  }
  if (over_) return false;
  *sample = samples_[in_batch_++];
  *epoch = epoch_;
  return true;
}

}  // namespace yc
