// Everything that shapes what the loader produces: batch geometry, mode, the Ultralytics
// augmentation hyperparameters (same names and defaults as ultralytics/cfg/default.yaml at 8.3.228),
// sampling (seed, shuffle, ranks) and the pipeline's resources (threads, prefetch, memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "libcache/base/range_fetcher.h"

namespace yc {

// Where batch image buffers come from. The trainer plugs in pinned (page-locked) CUDA host memory so
// batches can be copied to the GPU asynchronously; the default is 4 KiB-aligned malloc.
// Allocate is called only when the batch pool grows (start-up, or a consumer holding many batches),
// never per batch; Free receives the size given to Allocate. Must be thread-safe.
struct BufferAllocator {
  virtual ~BufferAllocator() = default;
  virtual void* Allocate(size_t bytes) = 0;  // nullptr on failure
  virtual void Free(void* ptr, size_t bytes) = 0;
};

// 4 KiB-aligned heap memory.
class AlignedAllocator final : public BufferAllocator {
 public:
  void* Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
};

enum class LoaderMode { kTrain, kVal };
// Train sampling order. kShuffle: a permutation of the whole split each epoch, Mosaic/MixUp
// partners from the whole split (Ultralytics'). kWindowed: for caches larger than RAM (as FFCV's
// QUASI_RANDOM, loader/order/window_order.h): shuffled blocks of contiguous records, grouped into windows
// of at most window_bytes, shuffled within each window; partners come from the sample's window.
enum class SampleOrder { kShuffle, kWindowed };
// How the windowed order reads its windows. kDirect: with O_DIRECT into the loader's own buffers
// (loader/io/window_stage.h), around the page cache: the rate of the disk on a cache larger than RAM.
// kPageCache: MADV_WILLNEED read-ahead into the page cache, as the default order: better when the
// cache fits in RAM after all (O_DIRECT always reads the disk).
enum class WindowIo { kDirect, kPageCache };
enum class ImageLayout { kNCHW, kNHWC };  // NCHW = Ultralytics' tensor layout
// Where Ultralytics' CopyPaste takes its instances from (copy_paste_mode): the sample mirrored, or
// another mosaic+affine sample.
enum class CopyPasteMode { kFlip, kMixup };

// Ultralytics hyperparameters that act on the data (default.yaml names and defaults).
struct AugmentHyp {
  double mosaic = 1.0;       // probability of Mosaic-4
  double mixup = 0.0;        // probability of MixUp (Beta(32,32) blend with another mosaic+affine sample)
  double cutmix = 0.0;       // probability of CutMix (a region of another mosaic+affine sample pasted in)
  // Probability of CopyPaste. Ultralytics pastes instance *segments*; the cache holds boxes only, and
  // on box-only labels Ultralytics' CopyPaste returns the sample unchanged, so this does too
  // (validated and recorded, no effect on the batches: docs/TRAINER.md).
  double copy_paste = 0.0;
  CopyPasteMode copy_paste_mode = CopyPasteMode::kFlip;
  double degrees = 0.0;      // rotation range, +/- degrees
  double translate = 0.1;    // +/- fraction of the output size
  double scale = 0.5;        // scale gain drawn from U(1 - scale, 1 + scale)
  double shear = 0.0;        // +/- degrees
  double perspective = 0.0;  // +/- (typically 0..0.001)
  double hsv_h = 0.015;      // hue gain (fraction of the 180-unit OpenCV hue circle)
  double hsv_s = 0.7;        // saturation gain
  double hsv_v = 0.4;        // value gain
  double flipud = 0.0;       // probability of a vertical flip
  double fliplr = 0.5;       // probability of a horizontal flip
  double bgr = 0.0;          // probability of the channels in BGR order (Ultralytics' Format, train only)
  int close_mosaic = 10;     // mosaic, mixup and cutmix are off for the last close_mosaic epochs
};

struct LoaderOptions {
  LoaderMode mode = LoaderMode::kTrain;
  int batch = 16;
  int imgsz = 640;   // square train size; long side of val images
  AugmentHyp hyp;    // used in train mode only
  int epochs = 100;  // total epochs, needed by close_mosaic

  uint64_t seed = 0;
  bool shuffle = true;     // train: shuffle each epoch (val never shuffles)
  bool drop_last = false;  // drop this rank's last, incomplete batch
  int rank = 0;            // this process's rank among world_size (DDP)
  int world_size = 1;
  SampleOrder order = SampleOrder::kShuffle;  // train only
  uint64_t window_bytes = 256ull << 20;       // kWindowed: the most record bytes one window spans
  WindowIo window_io = WindowIo::kDirect;     // kWindowed: how windows are read (needs read_ahead_bytes > 0)

  // Val batching: rectangular batches ordered by aspect ratio (Ultralytics' val default), each batch
  // letterboxed to ceil(shape * imgsz / stride + pad) * stride. With rect = false every val image is
  // letterboxed into imgsz x imgsz.
  bool rect = true;
  double pad = 0.5;
  int stride = 32;
  // Train batching as Ultralytics' rect=True (`ultralytics/data/base.py` set_rectangle with pad 0, as
  // build_yolo_dataset gives train): the records in aspect-ratio order, never shuffled (`shuffle` is
  // not used), each batch letterboxed to its own shape ceil(shape * imgsz / stride) * stride, and
  // mosaic, mixup and cutmix off (YOLODataset.build_transforms). Ranks take whole batches in turn.
  bool train_rect = false;

  int threads = 0;   // TBB worker threads for this loader; 0 = all hardware threads
  int prefetch = 4;  // batches in flight ahead of the consumer
  // Read-ahead (read_ahead.h) for caches larger than RAM: at most this many bytes of records that no
  // worker has started yet are requested from the disk ahead of the workers; 0 = off. 512 MiB covers
  // ~140 mosaic samples at 640 (~3.6 MB each), over 0.3 s of a 1.6 GB/s disk, so the disk always has
  // work queued, and costs ~2% of a 24 GiB machine's RAM (per loader: one per rank). A no-op for
  // sources that are not file-backed; on a cache in RAM the hints find the pages present. In the
  // windowed order with window_io kDirect, the window stage holds the window in use plus this many
  // bytes of the windows after it (at least one window).
  uint64_t read_ahead_bytes = uint64_t{512} << 20;
  // Benchmarks: before each sample a worker times a ~1 us multiply chain (loader/base/core_clock.h), so
  // Loader::stats() reports the clock the workers ran at (~0.1% of a sample).
  bool probe_core_clock = false;
  ImageLayout layout = ImageLayout::kNCHW;

  // Image path: kFast composes each mosaic tile's placement with the affine matrix and warps it
  // straight into the output; kReference builds the 2s x 2s canvas like Ultralytics (tests, bench).
  enum class Path { kFast, kReference } path = Path::kFast;

  std::shared_ptr<BufferAllocator> allocator;  // null = AlignedAllocator

  // A cache streamed from object storage (libcache/build/stream_cache.h): its data files hold only what
  // was fetched, so every record must come through the window stage, which has each window's byte
  // ranges fetched (pinned) before it reads them. Needs the windowed order with window_io kDirect and
  // read_ahead_bytes > 0 (the loader refuses anything else). Under world_size > 1 each rank walks only
  // the windows dealt to it (loader/order/window_deal.h), so each rank's fetcher brings only its share.
  std::shared_ptr<RangeFetcher> fetcher;
};

// Checks ranges and combinations; the message names the offending option.
Status ValidateOptions(const LoaderOptions& options);

// True when mosaic and mixup are switched off for this epoch (Ultralytics close_mosaic).
bool MosaicClosed(const LoaderOptions& options, int epoch);
// True when the batches have their own shapes (val rect, or train_rect): every record is sized first.
bool UsesRectBatches(const LoaderOptions& options);

}  // namespace yc
