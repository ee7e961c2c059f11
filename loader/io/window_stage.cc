#include "loader/io/window_stage.h"

#include <algorithm>

#include "loader/io/staged_window.h"

namespace yc {

namespace {

// Two records' extents closer than this are read as one range: a short gap (LMDB's page headers,
// the shard's alignment padding) costs less disk time than another request.
constexpr uint64_t kMergeGapBytes = uint64_t{64} << 10;

}  // namespace

// One slot of the stage: while kReady, the records of one window (`records`, served to the workers).
struct WindowStage::Window {
  explicit Window(const RecordSource* source) : records(source) {}
  StagedWindow records;
  enum class State { kFree, kLoading, kReady } state = State::kFree;
  Key key;
  size_t remaining = 0;  // samples not yet released
  std::shared_ptr<const WindowedEpoch> epoch_windows;  // keeps `members` alive
  const uint32_t* members = nullptr;                   // the window's records
  size_t member_count = 0;
  Status error;  // its ranges could not be fetched (a streamed cache): its samples fail with this
};

bool WindowStage::Supports(const RecordSource& source) {
  RecordExtent first;
  return source.size() > 0 && source.Extent(0, &first) && !source.DataFilePath(first.file).empty();
}

WindowStage::WindowStage(const RecordSource* source, const LoaderOptions* options, const EpochSampler& sampler)
    : source_(source),
      options_(options),
      // The window in use plus read_ahead_bytes of windows after it, at least one.
      slots_(1 + std::max<uint64_t>(1, (options->read_ahead_bytes + options->window_bytes - 1) /
                                           std::max<uint64_t>(options->window_bytes, 1))),
      walk_(options, sampler),
      reads_(kReaders, [this](const Chunk& c) { return files_[c.file]->ReadAligned(c.offset, c.length, c.dst).ok(); }) {
  for (size_t i = 0; i < slots_; ++i) windows_.push_back(std::make_unique<Window>(source));
  thread_ = std::thread([this] { Run(); });
}

WindowStage::~WindowStage() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cancelled_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WindowStage::Restart(int epoch, size_t first_batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    restart_epoch_ = epoch;
    restart_batch_ = first_batch;
    cancelled_ = false;
    walk_over_ = false;
    // No sample holds a window now; the one being loaded (if any) is dropped when its load ends.
    for (auto& w : windows_)
      if (w->state == Window::State::kReady) w->state = Window::State::kFree;
  }
  cv_.notify_all();
}

void WindowStage::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

WindowStage::Window* WindowStage::FindReady(const Key& key) {
  for (auto& w : windows_)
    if (w->state == Window::State::kReady && w->key == key) return w.get();
  return nullptr;
}

const RecordSource* WindowStage::Acquire(int epoch, const SampleSlot& s, Status* error) {
  const Key key{epoch, s.position / source_->size(), s.window};
  std::unique_lock<std::mutex> lock(mu_);
  Window* w = nullptr;
  // A sample the walk never reaches (only a loader bug could launch one) must not hang its worker:
  // once the walk is over with nothing loading, it is read from the source's mapping instead.
  auto beyond_walk = [&] {
    if (!walk_over_) return false;
    for (const auto& x : windows_)
      if (x->state == Window::State::kLoading) return false;
    return true;
  };
  cv_.wait(lock, [&] { return cancelled_ || (w = FindReady(key)) != nullptr || beyond_walk(); });
  if (cancelled_ || w == nullptr) return nullptr;
  if (!w->error.ok()) {  // released here: its worker gets no records to release
    if (error != nullptr) *error = w->error;
    if (w->remaining > 0 && --w->remaining == 0) {
      w->state = Window::State::kFree;
      cv_.notify_all();
    }
    return nullptr;
  }
  return &w->records;
}

void WindowStage::Release(const RecordSource* records) {
  bool freed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Window* w = nullptr;
    for (auto& x : windows_)
      if (&x->records == records) w = x.get();
    if (w != nullptr && w->state == Window::State::kReady && w->remaining > 0 && --w->remaining == 0) {
      w->state = Window::State::kFree;
      freed = true;
    }
  }
  if (freed) cv_.notify_all();
}

bool WindowStage::PlanWindow(Window* w) {
  const uint64_t n = source_->size();
  bool first = true;
  size_t samples = 0;
  for (;;) {
    SampleSlot s;
    int epoch = 0;
    if (have_pending_) {
      s = pending_;
      epoch = pending_epoch_;
      have_pending_ = false;
    } else if (!walk_.Next(&s, &epoch)) {
      break;
    }
    const Key key{epoch, s.position / n, s.window};
    if (first) {
      w->key = key;
      w->epoch_windows = walk_.windows();  // the sampler is at this sample's epoch
      const PartnerDomain domain = w->epoch_windows->Partners(s.window);
      w->members = domain.records;
      w->member_count = domain.size;
      first = false;
    } else if (!(key == w->key)) {  // the next window's first sample: kept for the next call
      pending_ = s;
      pending_epoch_ = epoch;
      have_pending_ = true;
      break;
    }
    ++samples;
  }
  w->remaining = samples;
  return samples > 0;
}

bool WindowStage::Load(Window* w) {
  w->error = Status::OK();
  // Each record's extent, sorted by place on disk and merged into aligned ranges.
  extents_.clear();
  for (size_t i = 0; i < w->member_count; ++i) {
    RecordExtent e;
    if (!source_->Extent(w->members[i], &e)) return false;
    extents_.push_back(e);
  }
  std::vector<size_t> order(extents_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto place = [&](size_t a, size_t b) {
    const RecordExtent &x = extents_[a], &y = extents_[b];
    return x.file != y.file ? x.file < y.file : x.offset < y.offset;
  };
  std::sort(order.begin(), order.end(), place);
  struct Range {
    uint32_t file;
    uint64_t begin, end, at;  // aligned file bytes [begin, end) land at buffer offset `at`
  };
  std::vector<Range> ranges;
  uint64_t total = 0;
  // A streamed cache fetches what its ranges cover over the network, where a gap costs bandwidth and
  // another GET little (they run in parallel): only touching records are merged there.
  const uint64_t merge_gap = options_->fetcher != nullptr ? 0 : kMergeGapBytes;
  for (size_t k : order) {  // first the ranges and the buffer size
    const RecordExtent& e = extents_[k];
    const uint64_t begin = AlignDown(e.offset), end = AlignUp(e.offset + e.length);
    if (ranges.empty() || ranges.back().file != e.file || begin > ranges.back().end + merge_gap) {
      ranges.push_back(Range{e.file, begin, end, total});
    } else {
      total -= ranges.back().end - ranges.back().begin;
      ranges.back().end = std::max(ranges.back().end, end);
    }
    total += ranges.back().end - ranges.back().begin;
  }
  uint8_t* buffer = w->records.Reserve(total, options_->window_bytes);
  if (buffer == nullptr) return false;
  size_t r = 0;
  for (size_t k : order) {  // then where each record lands in it
    const RecordExtent& e = extents_[k];
    while (ranges[r].file != e.file || e.offset + e.length > ranges[r].end) ++r;
    w->records.Add(w->members[k], ranges[r].at + (e.offset - ranges[r].begin), e.length);
  }
  // A streamed cache: the ranges onto local disk first, kept there until they are read.
  uint64_t pin = 0;
  if (options_->fetcher != nullptr) {
    std::vector<FileRange> wanted;
    for (const Range& r : ranges) wanted.push_back({source_->DataFilePath(r.file), r.begin, r.end});
    w->error = options_->fetcher->Fetch(wanted, &pin);
    if (!w->error.ok()) return false;
  }
  struct Unpin {
    RangeFetcher* fetcher;
    uint64_t pin;
    ~Unpin() {
      if (fetcher != nullptr) fetcher->Unpin(pin);
    }
  } unpin{options_->fetcher.get(), pin};
  // The files the ranges need, opened once (readers are idle between windows).
  for (const Range& r : ranges) {
    if (files_.size() <= r.file) files_.resize(r.file + 1);
    if (files_[r.file] == nullptr) {
      // A streamed window was just written by the fetch: its pages are in the page cache, and an
      // O_DIRECT read would first wait for their writeback (measured on this ext4 disk: 211 - 281 img/s
      // with O_DIRECT, 917 - 1,042 through the page cache; docs/REMOTE.md, "Streaming").
      Result<std::unique_ptr<DirectFile>> f =
          DirectFile::Open(source_->DataFilePath(r.file), /*direct=*/options_->fetcher == nullptr);
      if (!f.ok()) return false;
      if (!f.value()->direct()) all_direct_.store(false);
      files_[r.file] = std::move(f.value());
    }
  }
  chunks_.clear();
  for (const Range& r : ranges)
    for (uint64_t off = r.begin; off < r.end; off += kChunkBytes)
      chunks_.push_back(Chunk{r.file, off, std::min(kChunkBytes, r.end - off), buffer + r.at + (off - r.begin)});
  reads_.Push(chunks_.begin(), chunks_.end());
  if (!reads_.Drain()) return false;
  // The arena for decompressed records as large as the window: with the stored bytes, a slot of a
  // compressed cache holds at most about twice window_bytes.
  w->records.Seal(options_->window_bytes);
  uint64_t held = 0;
  for (const auto& other : windows_) held += other->records.allocated_bytes();
  if (held > peak_buffer_bytes_.load()) peak_buffer_bytes_.store(held);
  staged_bytes_.fetch_add(total);
  windows_staged_.fetch_add(1);
  return true;
}

void WindowStage::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t seen = 0;
  while (!stop_) {
    if (seen != generation_) {  // Restart: Restart itself freed the windows
      seen = generation_;
      walk_.Restart(restart_epoch_, restart_batch_);
      have_pending_ = false;
    }
    Window* slot = nullptr;
    for (auto& w : windows_)
      if (w->state == Window::State::kFree) {
        slot = w.get();
        break;
      }
    if (cancelled_ || walk_over_ || slot == nullptr) {
      cv_.wait(lock);
      continue;
    }
    slot->state = Window::State::kLoading;
    const uint64_t generation = generation_;
    lock.unlock();
    const bool planned = PlanWindow(slot);
    const bool loaded = planned && Load(slot);
    if (planned && !loaded) slot->records.Clear();  // its samples read from the source's mapping
    lock.lock();
    if (!planned) {
      if (generation == generation_) walk_over_ = true;
      slot->state = Window::State::kFree;
      cv_.notify_all();  // a sample the walk does not hold is read from the source (Acquire)
      continue;
    }
    if (generation != generation_) {  // a Restart came in during the load: the window is the old walk's
      slot->state = Window::State::kFree;
      continue;
    }
    slot->state = Window::State::kReady;
    cv_.notify_all();
  }
}

}  // namespace yc
