// The public loader: turns a RecordSource into a stream of augmented, collated batches.
//
//   auto loader = yc::Loader::Create(source, options);      // Result<std::unique_ptr<Loader>>
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     (*loader)->StartEpoch(epoch);
//     std::shared_ptr<yc::Batch> batch;
//     while (status = (*loader)->Next(&batch), status.ok() && batch) { ... use batch ... }
//   }
//
// Work runs in a TBB task_arena of `threads` threads; up to `prefetch` batches are in flight, the
// samples of each batch in parallel, and batches come out in order. A batch's memory goes back to
// the loader's pool when the last shared_ptr to it is released (holding many at once just grows the
// pool). A batch depends only on (seed, epoch, batch index, rank, world_size): not on the thread
// count, prefetch or timing, and StartEpoch(epoch, k) resumes exactly at batch k. In train mode the
// workers run ahead into epoch + 1 (if below options.epochs) as an epoch's last batches drain;
// StartEpoch(epoch + 1) picks those batches up, any other StartEpoch discards them.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/status.h"
#include "libcache/record_source.h"
#include "loader/batch.h"
#include "loader/options.h"
#include "loader/stats.h"

namespace yc {

class Loader {
 public:
  // Validates the options; with rect batches (val rect, train_rect) it reads every record once for its size. The
  // source is shared: it must stay valid while batches from it are in use.
  static Result<std::unique_ptr<Loader>> Create(std::shared_ptr<const RecordSource> source, LoaderOptions options);
  // Cancels in-flight work and waits for it. Batches still held by the consumer stay valid.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const LoaderOptions& options() const;
  size_t dataset_size() const;
  size_t batches_per_epoch() const;
  // Each distinct shape among an epoch's batches (this rank), in order of first appearance: what a model
  // meets, for warming its kernels up before the first batch (EpochSampler::DistinctShapes).
  std::vector<BatchShape> batch_shapes() const;

  // Work done since Create, for benchmarks (stats.h says what each figure counts).
  using Stats = LoaderStats;
  Stats stats() const;

  // Starts (or restarts) an epoch at batch `first_batch`, cancelling whatever is in flight unless it
  // is exactly this epoch's batches from `first_batch` on (launched ahead at the previous epoch's end).
  Status StartEpoch(int epoch, size_t first_batch = 0);

  // The next batch in order; *out is null once the epoch is done. A worker's failure comes back here,
  // naming the record and its source path, and again on every call until the next StartEpoch.
  Status Next(std::shared_ptr<Batch>* out);

  // A new total epoch count (Ultralytics' time= recomputes it after every epoch): close_mosaic and the
  // run-ahead follow it. Batches launched ahead under the old count are dropped, so the next StartEpoch
  // launches them again; a batch still depends only on (seed, epoch, index, the count). No-op when equal.
  Status SetEpochs(int epochs);

  // Drops every batch in flight and everything read ahead (read-ahead requests, the windowed order's
  // staged windows); the next Next launches them again from the same batch, as on a fresh loader.
  // For bench --cold: after the page cache is dropped, the timed run must start with nothing read.
  void RestartPipeline();

  struct Impl;

 private:
  explicit Loader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace yc
