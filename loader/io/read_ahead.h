// Read-ahead for caches larger than RAM: a thread that walks the loader's upcoming samples in launch
// order (across the epoch boundary, as Loader's Schedule runs ahead), names every record each will
// read (RecordsOfSample), and asks the kernel for their bytes (RecordSource::WillNeedRange) before a
// worker touches them, so the workers stop waiting on one synchronous page fault each.
//
//   ReadAhead ra(source, options, sampler);  // copies the sampler; starts its thread
//   ra.Restart(epoch, first_batch);          // consumer, whenever no sample of the old walk is queued
//   ra.SampleStarted();                      // every worker, once per sample it takes off the queue
//   // ~ReadAhead stops and joins the thread
//
// Budget: the bytes requested for samples no worker has started yet stay <= options.read_ahead_bytes,
// so read-ahead never evicts pages the workers have not used yet (a sample bigger than the whole
// budget is skipped: its worker faults it in as before). Each step takes the next samples up to a
// quarter of the budget, sorts their extents by (file, offset) and merges adjacent ones, so the disk
// sees few, ordered, large requests; 32 reader threads issue MADV_WILLNEED on them (enough requests in
// flight to keep the disk busy, and no copy: on a cold 32 GB cache this beat pread into a throwaway
// buffer, see docs/LOADER.md). A hint only: the batches do not change.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "libcache/record_source.h"
#include "loader/io/io_queue.h"
#include "loader/options.h"
#include "loader/order/launch_walk.h"
#include "loader/order/sampler.h"

namespace yc {

class ReadAhead {
 public:
  // `source` and `options` must outlive this object. Waits for Restart before reading anything.
  ReadAhead(const RecordSource* source, const LoaderOptions* options, const EpochSampler& sampler);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // A new walk from batch `first_batch` of `epoch`. Call only when no worker will start a sample of
  // the previous walk (the loader calls it after cancelling), since it resets the started count.
  void Restart(int epoch, size_t first_batch);
  // Workers: one more sample left the launch queue (lock-free; the thread polls it).
  void SampleStarted() { started_.fetch_add(1, std::memory_order_relaxed); }

  // For tests: bytes requested so far, and the most ever outstanding ahead of the workers.
  uint64_t requested_bytes() const { return requested_bytes_.load(); }
  uint64_t peak_outstanding_bytes() const { return peak_outstanding_.load(); }

 private:
  struct Step {
    uint64_t end = 0;    // walk position after the step's last sample
    uint64_t bytes = 0;  // requested for it
  };
  void Run();
  // Takes the walk's next samples (up to `room` bytes, at most a quarter of the budget) into ranges_;
  // false when the walk is over.
  bool PlanStep(uint64_t room, Step* step);

  const RecordSource* source_;
  const LoaderOptions* options_;
  const uint64_t budget_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;  // bumped by Restart
  int restart_epoch_ = 0;
  size_t restart_batch_ = 0;
  std::atomic<uint64_t> started_{0};

  // The thread's walk (touched only by it).
  LaunchWalk walk_;
  uint64_t position_ = 0;  // samples walked since Restart
  std::vector<uint64_t> records_;
  std::vector<RecordExtent> ranges_;
  std::deque<Step> outstanding_;
  uint64_t outstanding_bytes_ = 0;

  std::atomic<uint64_t> requested_bytes_{0}, peak_outstanding_{0};
  std::thread thread_;

  // kReaders threads request the queued ranges (in order), so that many requests are in flight.
  static constexpr int kReaders = 32;
  IoQueue<RecordExtent> hints_;
};

}  // namespace yc
