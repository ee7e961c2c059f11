// The window stage: how the windowed order (window_order.h) reads a cache larger than RAM at the
// disk's rate. A thread walks the loader's launch order (LaunchWalk) a window at a time and reads each
// window's records with O_DIRECT (DirectFile), in large sorted reads from a few reader threads, into
// buffers of its own (StagedWindow, staged_window.h); the workers decode records from there, each
// compressed record once per window (RecordSource::ReadStored). Nothing goes
// through the page cache, so the kernel spends no time on page-cache insertion, reclaim or page
// faults: on 2 cores that work was the difference between MADV_WILLNEED read-ahead and the in-RAM
// rate (docs/LOADER.md, "The window stage"). The batches do not change: only where the bytes come from.
//
//   WindowStage stage(source, &options, sampler);  // copies the sampler; starts its threads
//   stage.Restart(epoch, first_batch);              // consumer: a new walk (no sample of the old queued)
//   const RecordSource* records = stage.Acquire(epoch, slot);  // worker: blocks until slot's window is in
//   ... ProcessSample with records as the context's source ...
//   stage.Release(records);                         // worker: after the sample, whatever happened
//   stage.Cancel();                                 // consumer: wakes every Acquire (nullptr) until Restart
//
// Memory: the window the workers are on plus enough windows after it to hold options.read_ahead_bytes
// (at least one), each a buffer of about 9/8 of window_bytes, allocated once (huge pages where the
// kernel has them). A window is a run of samples of one (epoch, window, pass over the split: rank
// padding wraps into window 0 again); it is freed when its last sample is released. Where O_DIRECT is
// refused the same reads go through the page cache; where a read fails the window's records are read
// from the source's own mapping (which reports the damage). A streamed cache (options.fetcher) has
// each window's byte ranges fetched before they are read, from the stage thread, so the windows after
// the one in use are fetched while it is consumed; a fetch that fails fails the window's samples.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "libcache/base/direct_file.h"
#include "libcache/record_source.h"
#include "loader/io/io_queue.h"
#include "loader/options.h"
#include "loader/order/launch_walk.h"
#include "loader/order/sampler.h"

namespace yc {

class WindowStage {
 public:
  // `source` and `options` must outlive the stage. Reads nothing before Restart.
  WindowStage(const RecordSource* source, const LoaderOptions* options, const EpochSampler& sampler);
  ~WindowStage();
  WindowStage(const WindowStage&) = delete;
  WindowStage& operator=(const WindowStage&) = delete;

  // Whether the stage can serve `source`: its records have extents and its data files paths.
  static bool Supports(const RecordSource& source);

  // Consumer: a new walk from batch `first_batch` of `epoch`; every window held is dropped. Call only
  // when no sample holds a window (after Cancel and the workers have drained).
  void Restart(int epoch, size_t first_batch);
  // Consumer: every Acquire returns nullptr (waiting ones too) until the next Restart.
  void Cancel();

  // Worker: the records of sample `s` of `epoch`, served from its staged window (blocks until the
  // window is read); nullptr after Cancel, or for a sample the walk never reaches (then read it from
  // the source). Every non-null result is Released once. With options.fetcher (a streamed cache), a
  // window whose ranges could not be fetched gives nullptr and the reason in *error: its samples must
  // fail, since the source's files do not hold those records.
  const RecordSource* Acquire(int epoch, const SampleSlot& s, Status* error = nullptr);
  void Release(const RecordSource* records);

  // For tests and bench: bytes read into the stage; windows read; whether every file took O_DIRECT.
  uint64_t staged_bytes() const { return staged_bytes_.load(); }
  uint64_t windows_staged() const { return windows_staged_.load(); }
  bool all_direct() const { return all_direct_.load(); }
  // The most bytes the stage's buffers held at once.
  uint64_t peak_buffer_bytes() const { return peak_buffer_bytes_.load(); }

 private:
  struct Key {
    int epoch = -1;
    uint64_t pass = 0;  // global position / split size
    uint32_t window = 0;
    bool operator==(const Key& o) const { return epoch == o.epoch && pass == o.pass && window == o.window; }
  };
  struct Window;  // one slot: a StagedWindow and its place in the walk
  void Run();
  // Takes the walk's next window: its key, its samples and its records. False when the walk is over.
  bool PlanWindow(Window* w);
  // Reads w's records into its buffer; false (w falls back to the source) when a file cannot be read,
  // or (w->error set) when options.fetcher could not fetch w's ranges.
  bool Load(Window* w);
  Window* FindReady(const Key& key);

  const RecordSource* source_;
  const LoaderOptions* options_;
  const size_t slots_;  // windows held at once

  std::mutex mu_;
  std::condition_variable cv_;  // workers wait for windows, the thread for free slots and restarts
  bool stop_ = false, cancelled_ = true;
  bool walk_over_ = false;    // the walk of this generation has no window left to plan
  uint64_t generation_ = 0;  // bumped by Restart
  int restart_epoch_ = 0;
  size_t restart_batch_ = 0;
  std::vector<std::unique_ptr<Window>> windows_;  // slots_ of them

  // The thread's walk (touched only by it).
  LaunchWalk walk_;
  bool have_pending_ = false;  // the first sample of the next window, taken while ending this one
  SampleSlot pending_;
  int pending_epoch_ = 0;
  std::vector<std::unique_ptr<DirectFile>> files_;  // opened on first use
  std::vector<RecordExtent> extents_;

  // Chunks of the window being loaded, read by kReaders threads: 64 MiB in flight. Measured cold on
  // this disk (docs/LOADER.md): 4 x 8 MiB left it idle at times (1,723-2,164 img/s); 8 x 8, 4 x 16,
  // 16 x 8 and 8 x 16 MiB all gave 2,094-2,448, within the runs' noise.
  struct Chunk {
    uint32_t file = 0;
    uint64_t offset = 0, length = 0;
    uint8_t* dst = nullptr;
  };
  static constexpr int kReaders = 8;
  static constexpr uint64_t kChunkBytes = uint64_t{8} << 20;
  std::vector<Chunk> chunks_;
  IoQueue<Chunk> reads_;  // after files_ and windows_, which its threads use

  std::atomic<uint64_t> staged_bytes_{0}, windows_staged_{0}, peak_buffer_bytes_{0};
  std::atomic<bool> all_direct_{true};
  std::thread thread_;
};

}  // namespace yc
