#include "loader/io/read_ahead.h"

#include <algorithm>
#include <chrono>

#include "loader/render/processor.h"

namespace yc {

ReadAhead::ReadAhead(const RecordSource* source, const LoaderOptions* options, const EpochSampler& sampler)
    : source_(source),
      options_(options),
      budget_(options->read_ahead_bytes),
      walk_(options, sampler),
      hints_(kReaders, [this](const RecordExtent& r) {
        source_->WillNeedRange(r);
        return true;  // a hint: the workers' own reads report any error
      }) {
  thread_ = std::thread([this] { Run(); });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ReadAhead::Restart(int epoch, size_t first_batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    restart_epoch_ = epoch;
    restart_batch_ = first_batch;
    started_.store(0);
  }
  hints_.Clear();
  cv_.notify_all();
}

bool ReadAhead::PlanStep(uint64_t room, Step* step) {
  // A quarter of the budget a step: the next step's requests go out while the workers still read
  // the previous ones, and a step's sort covers enough records to find adjacent ones.
  const uint64_t target = std::max<uint64_t>(budget_ / 4, 1);
  ranges_.clear();
  uint64_t bytes = 0;  // of the step's extents before merging (an upper bound on the merged bytes)
  SampleSlot sample;
  int epoch = 0;
  bool any = false;
  while (bytes < target && walk_.Next(&sample, &epoch)) {
    any = true;
    const SampleContext ctx = MakeSampleContext(source_, options_, epoch, walk_.sampler());
    records_.clear();
    RecordsOfSample(ctx, sample, &records_);
    uint64_t sample_bytes = 0;
    const size_t before = ranges_.size();
    for (uint64_t r : records_) {
      RecordExtent e;
      if (!source_->Extent(r, &e)) continue;
      ranges_.push_back(e);
      sample_bytes += e.length;
    }
    ++position_;
    if (sample_bytes > budget_) {  // never within budget: its worker faults it in
      ranges_.resize(before);
      continue;
    }
    if (bytes + sample_bytes > room) {  // no room left: this sample waits for the next step
      ranges_.resize(before);
      --position_;
      walk_.Back();
      break;
    }
    bytes += sample_bytes;
  }
  // Sorted and merged: duplicates requested once, neighbours in one request, the disk in order.
  std::sort(ranges_.begin(), ranges_.end(), [](const RecordExtent& a, const RecordExtent& b) {
    return a.file != b.file ? a.file < b.file : a.offset < b.offset;
  });
  size_t kept = 0;
  for (const RecordExtent& e : ranges_) {
    if (kept > 0) {
      RecordExtent& last = ranges_[kept - 1];
      if (e.file == last.file && e.offset <= last.offset + last.length) {
        last.length = std::max(last.length, e.offset + e.length - last.offset);
        continue;
      }
    }
    ranges_[kept++] = e;
  }
  ranges_.resize(kept);
  step->end = position_;
  step->bytes = 0;
  for (const RecordExtent& e : ranges_) step->bytes += e.length;
  return any;
}

void ReadAhead::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t seen = 0;
  bool stalled = false;  // the last step found no sample that fits: wait for the workers
  while (!stop_) {
    if (seen != generation_) {
      seen = generation_;
      walk_.Restart(restart_epoch_, restart_batch_);
      position_ = 0;
      outstanding_.clear();
      outstanding_bytes_ = 0;
    }
    // What the workers have started no longer counts against the budget.
    const uint64_t started = started_.load(std::memory_order_relaxed);
    while (!outstanding_.empty() && outstanding_.front().end <= started) {
      outstanding_bytes_ -= outstanding_.front().bytes;
      outstanding_.pop_front();
    }
    const uint64_t room = budget_ - std::min(budget_, outstanding_bytes_);
    if (walk_.over() || room == 0 || room < budget_ / 4 || stalled) {
      stalled = false;
      // Workers start a sample every few hundred microseconds or more: polling every millisecond
      // keeps the hot path free of locks and notifications at a negligible cost.
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    Step step;
    const uint64_t position = position_;
    lock.unlock();
    const bool any = PlanStep(room, &step);
    stalled = position_ == position;
    hints_.Push(ranges_.begin(), ranges_.end());
    lock.lock();
    if (seen != generation_ || !any) continue;  // a Restart came in: the step belongs to the old walk
    outstanding_.push_back(step);
    outstanding_bytes_ += step.bytes;
    requested_bytes_.fetch_add(step.bytes);
    if (outstanding_bytes_ > peak_outstanding_.load()) peak_outstanding_.store(outstanding_bytes_);
  }
}

}  // namespace yc
