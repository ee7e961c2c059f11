// The loader's launch order, replayed ahead of it by the read-ahead and the window stage: the samples
// of each batch in turn, then on into the next epoch in train mode (up to options.epochs), exactly as
// Loader's Schedule launches them.
//
//   LaunchWalk walk(&options, sampler);   // copies the sampler (SetEpoch is not thread-safe)
//   walk.Restart(epoch, first_batch);
//   SampleSlot s; int epoch;
//   while (walk.Next(&s, &epoch)) ...
//   walk.Back();                          // hands the last sample out again on the next Next
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "loader/options.h"
#include "loader/order/sampler.h"

namespace yc {

class LaunchWalk {
 public:
  // `options` must outlive the walk. Over (Next returns false) until Restart.
  LaunchWalk(const LoaderOptions* options, const EpochSampler& sampler);

  void Restart(int epoch, size_t first_batch);
  bool Next(SampleSlot* sample, int* epoch);
  // Undoes the last Next (only once between two Nexts).
  void Back() { --in_batch_; }
  // True once a Next found no sample left (before the first Restart too).
  bool over() const { return over_; }
  // The windowed order's windows of the epoch the last Next came from (null for the default order).
  std::shared_ptr<const WindowedEpoch> windows() const { return sampler_.windows(); }
  const EpochSampler& sampler() const { return sampler_; }

 private:
  const LoaderOptions* options_;
  EpochSampler sampler_;
  int epoch_ = 0;
  size_t batch_ = 0, in_batch_ = 0;
  bool over_ = true;
  std::vector<SampleSlot> samples_;
};

}  // namespace yc
