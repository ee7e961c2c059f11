// The windowed train order, for caches larger than RAM (FFCV's QUASI_RANDOM, issue 17):
//
//   std::vector<RecordBlock> blocks = SplitIntoBlocks(source, options);  // once per loader
//   std::shared_ptr<const WindowedEpoch> e = MakeWindowedEpoch(blocks, options, epoch);
//   e->records[p % n]                      // the record at global position p
//   e->Partners(e->WindowOf(p % n))        // where its Mosaic/MixUp partners come from
//
// A block is a run of consecutive records stored back to back in one data file (found from
// RecordSource::Extent), about BlockTargetBytes(window_bytes) long: big enough that reading it is a
// sequential read at the disk's rate, small enough that a window holds several blocks from different
// parts of the cache. Each epoch the blocks are shuffled, consecutive blocks are grouped into
// windows of at most window_bytes, and the records of each window are shuffled. Walking the order
// thus reads each record once per epoch, a block at a time, and the pages in use are one window
// (plus the next, which read-ahead fetches). Everything is keyed by (seed, epoch): deterministic,
// and any position's record and window can be recomputed to resume mid-epoch.
//
// Sources without extents (in-memory, decoding) count each record as imgsz * imgsz * 3 bytes, the
// most a cached record's pixels take, and cut blocks of equal record counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "libcache/record_source.h"
#include "loader/options.h"
#include "loader/order/partner_domain.h"

namespace yc {

// Records [begin, end) of the split; `bytes` is the span they occupy in their file.
struct RecordBlock {
  uint32_t begin = 0, end = 0;
  uint64_t bytes = 0;
};

// The block size aimed at: window_bytes / 8 (at least 8 blocks mix in a window), at most 64 MiB
// (a 64 MiB read costs ~40 ms at 1.6 GB/s against ~0.1 ms (SSD) to ~10 ms (disk) of seek, so the
// reads stay within 80-99% of sequential; larger blocks only make windows coarser).
uint64_t BlockTargetBytes(uint64_t window_bytes);

// Cuts the split into blocks: a block ends at a data-file change, at a record that does not follow
// its predecessor in the file, or once it reaches BlockTargetBytes(options.window_bytes).
std::vector<RecordBlock> SplitIntoBlocks(const RecordSource& source, const LoaderOptions& options);

struct WindowedEpoch {
  std::vector<uint32_t> records;       // the epoch's order: every record once
  std::vector<uint32_t> window_start;  // position where each window starts, then records.size()

  size_t windows() const { return window_start.size() - 1; }
  // The window holding position `p` (< records.size()).
  uint32_t WindowOf(uint64_t p) const;
  // Window `w`'s records, as the partner domain of its samples.
  PartnerDomain Partners(uint32_t w) const {
    return PartnerDomain(records.data() + window_start[w], window_start[w + 1] - window_start[w]);
  }
};

// The order of `epoch`. Without options.shuffle, blocks and records keep their cache order (the
// windows still bound where partners come from).
std::shared_ptr<const WindowedEpoch> MakeWindowedEpoch(const std::vector<RecordBlock>& blocks,
                                                       const LoaderOptions& options, int epoch);

}  // namespace yc
