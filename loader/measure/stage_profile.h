// Where a train sample's time goes, measured on the calling thread over `samples` samples drawn as the
// loader draws them: geometry + warp (record reads, mosaic placement, affine, boxes) and the finishing
// pass (HSV + layout into the batch slot), with the layout-only cost of that pass for comparison; and,
// apart, what reading one record costs (a pointer for raw records, decompression for zstd, the JPEG
// decode for jpeg: what a compressed cache adds to every read in the shuffle order, and to the first
// read of a record in each window of the windowed order, loader/io/staged_window.h).
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
  double record_read_ms = 0;    // per record: RecordSource::Read (checksum as opened, decode if compressed)
};

Result<StageProfile> ProfileTrainStages(const RecordSource& source, const LoaderOptions& options, int samples);

}  // namespace yc
