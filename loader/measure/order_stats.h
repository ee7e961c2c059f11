// Augmentation statistics of a train order, to compare the windowed order (caches larger than RAM)
// with the default shuffle: what the batches contain and where their records come from.
//
//   Result<OrderStats> s = MeasureOrderStats(source, options, /*epochs=*/3);
//   for (const OrderHistogram& h : s->histograms) ... h.Shares() ..., h.TotalVariation(other)
//
// Runs the Loader for `epochs` epochs (labels per sample, class shares, box areas of the emitted
// labels), and redraws every sample's plan as the workers do (uses of each record per epoch, as main
// sample or Mosaic/MixUp partner; data files a batch reads). Histograms with the same name have the
// same bins whatever the order, so they compare bin by bin.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/record_source.h"
#include "loader/options.h"

namespace yc {

struct OrderHistogram {
  std::string name;
  std::vector<std::string> bins;  // one label per bin
  std::vector<double> counts;
  double mean = 0;  // of the counted values (labels per sample, uses per record, files per batch); 0 otherwise

  std::vector<double> Shares() const;  // counts / total (zeros when empty)
  // 0.5 * sum |p - q| over the bins' shares: 0 identical, 1 disjoint. Bins must match.
  double TotalVariation(const OrderHistogram& other) const;
};

struct OrderStats {
  uint64_t samples = 0;  // main samples seen
  size_t windows = 0;    // per epoch (windowed order; 0 for shuffle)
  std::vector<OrderHistogram> histograms;
};

// `classes`: class ids 0..classes-1 get a bin each (larger ids are counted in the last bin).
Result<OrderStats> MeasureOrderStats(std::shared_ptr<const RecordSource> source, const LoaderOptions& options,
                                     int epochs, int classes);

}  // namespace yc
