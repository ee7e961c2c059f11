// Where a train sample's time goes, measured on the calling thread over `samples` samples drawn as the
// loader draws them: geometry + warp (record reads, mosaic placement, affine, boxes) and the finishing
// pass (HSV + layout into the batch slot), with the layout-only cost of that pass for comparison.
// Used by `yolocache bench` and bench/loader_bench to print per-stage times.
#pragma once

#include "libcache/record_source.h"
#include "loader/options.h"

namespace yc {

struct StageProfile {
  int samples = 0;
  double geometry_warp_ms = 0;  // per sample
  double hsv_layout_ms = 0;     // per sample
  double layout_only_ms = 0;    // per sample, the same pass without HSV
};

Result<StageProfile> ProfileTrainStages(const RecordSource& source, const LoaderOptions& options, int samples);

}  // namespace yc
