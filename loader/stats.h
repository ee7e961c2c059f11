// Loader::stats()'s figures (Loader::Stats), apart from loader.h so the workers' accounting
// (base/worker_stats.h) can fill them without including the loader's face.
#pragma once

#include <cstdint>

namespace yc {

// Work done since Create, for benchmarks: samples finished, and the workers' wall time spent on
// them summed over threads, whole and per stage (geometry + warp or letterbox; HSV + layout).
// busy_seconds adds the elapsed part of the samples in progress, so between two snapshots
// busy fraction = delta busy_seconds / (elapsed * threads) <= 1; the rest is time workers had no sample.
struct LoaderStats {
  uint64_t samples = 0;
  double sample_seconds = 0, render_seconds = 0, finish_seconds = 0;
  double busy_seconds = 0;
  // With options.probe_core_clock: the workers' probe chains, their cycles / seconds is the clock.
  double clock_cycles = 0, clock_seconds = 0;
};

}  // namespace yc
