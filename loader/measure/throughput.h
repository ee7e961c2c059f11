// Timed runs of a Loader, for benchmarks (`yolocache bench`): images per second as the consumer sees
// them, how long the consumer waited, the workers' own accounting (Loader::stats()) over the timed
// window, and optionally a checksum over every produced batch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "libcache/record_source.h"
#include "loader/options.h"

namespace yc {

// The default warm-up: it outlasts the prefetch, so every pooled batch buffer has been written once
// (first-touch page faults) before the clock starts.
inline int DefaultWarmup(int prefetch) { return prefetch + 2; }

struct ThroughputRun {
  int warmup = -1;    // untimed batches first; -1: DefaultWarmup(options.prefetch)
  int batches = 50;   // timed batches, crossing epochs as needed
  bool hash = false;  // chain the XXH3 of every timed batch's image bytes and label table into `checksum`
  const std::atomic<bool>* cancel = nullptr;  // set to stop (Ctrl-C): checked per batch, gives Cancelled
  // Drops the source's pages from the page cache before the warm-up and again before the timed run
  // (RecordSource::DropCachedPages), so the timed run reads from disk, as on a cache larger than RAM;
  // the loader then drops what it had read ahead (Loader::RestartPipeline), so the timed run also
  // pays for filling its pipeline, as at the start of an epoch.
  bool cold = false;
};

struct Throughput {
  double images_per_second = 0, seconds = 0;
  double wait_fraction = 0;  // of the timed window, the consumer blocked in Next()
  double worker_busy = 0;    // of the timed window x options.threads, workers inside samples
  double ms_per_sample = 0, render_ms = 0, finish_ms = 0;  // per sample finished in the window
  double core_ghz = 0;  // the workers' clock in the window (options.probe_core_clock; else 0)
  size_t images = 0, batches = 0;
  uint64_t checksum = 0;  // with `hash`: equal checksums mean identical batches
  // Bytes this process fetched from storage in the timed window (/proc/self/io read_bytes: page-fault
  // and read-ahead reads included, page-cache hits not); -1 where /proc/self/io cannot be read.
  int64_t disk_bytes = -1;
};

// This process's read_bytes from /proc/self/io, or -1.
int64_t ProcessDiskReadBytes();

// `options.threads` must be resolved (> 0). Hashing ~80 MB a batch would make the consumer the
// bottleneck, so callers time one run and hash another: batches depend only on (seed, epoch, index).
Result<Throughput> MeasureThroughput(std::shared_ptr<const RecordSource> source, const LoaderOptions& options,
                                     const ThroughputRun& run);

// Scaling across thread counts, measured side by side: `rounds` rounds, each running every count in
// `threads` once (in order, per_thread.batches x count timed batches each, so every run lasts about
// as long). On a shared host one thread's speed drifts by tens of percent within a minute; comparing
// each count with the first count of the same round, and taking medians over rounds, keeps that drift
// out of the ratio.
struct ScalingPoint {
  int threads = 0;
  Throughput run;
  double efficiency = 0;  // (img/s / threads) / (img/s / threads of the round's first count)
  // The same per clock cycle, (img/s / threads / core GHz) / (the same of the first count): what is
  // left of the loss once the host's clock change is taken out. 0 unless both clocks were probed.
  double cycle_efficiency = 0;
};
struct Scaling {
  std::vector<std::vector<ScalingPoint>> rounds;
  // Per thread count (in `threads` order), the median over rounds.
  std::vector<double> median_images_per_second, median_efficiency, median_core_ghz, median_cycle_efficiency;
};
// `per_thread`: its warm-up as is, its batches times each count.
Result<Scaling> MeasureScaling(std::shared_ptr<const RecordSource> source, LoaderOptions options,
                               const std::vector<int>& threads, int rounds, const ThroughputRun& per_thread);

}  // namespace yc
