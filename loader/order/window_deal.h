// The windowed order under several data-parallel ranks: each epoch's windows are dealt to the ranks, so
// that each rank reads (and, streaming a cache from object storage, fetches) only its share of the
// cache, not every window.
//
//   std::shared_ptr<const WindowedEpoch> all = MakeWindowedEpoch(blocks, options, epoch);
//   std::shared_ptr<const WindowedEpoch> mine = DealWindows(all, world_size, rank);
//   mine->records[j]                    // the record at this rank's local position j (global position
//                                       //   RankShareStart(n, world_size, rank) + j keys its randomness)
//   mine->Partners(mine->WindowOf(j))   // its Mosaic/MixUp partners: its piece of its window
//
// How: the epoch's order (shuffled windows of shuffled records, keyed by (seed, epoch)) is padded to a
// multiple of world_size by repeating from its start, as the shuffle order and PyTorch's
// DistributedSampler pad, and cut into world_size runs of L = ceil(n / world_size) consecutive positions;
// rank r takes positions [r L, (r + 1) L). Every rank thus runs the same number of samples (DDP needs the
// same step count on every rank), the ranks together run every record exactly once before the padding
// (the at most world_size - 1 padded samples repeat the epoch's first records, on the last ranks), and a
// rank's run is a stretch of whole windows with at most a part of a window at each end, the part its
// neighbour does not take. A window a boundary cuts is split by record index, not by walk position (each
// part keeps the window's shuffled order): records are stored in index order, so each part is one run of
// bytes and the neighbours share at most the fetch block at the cut. A rank's windows are those pieces:
// the windows inside its run, its ends' parts and the padding's part of window 0 each its own window, so
// the rank fetches and stages only its own records and draws partners only among them. Everything depends on (seed, epoch, world_size, rank)
// only, and the epoch's windows change every epoch, so a rank's windows do too.
//
// One rank: the epoch itself (the same object), the order the windowed order always had.
#pragma once

#include <cstdint>
#include <memory>

#include "loader/order/window_order.h"

namespace yc {

// Samples each rank runs per epoch: ceil(n / world_size).
uint64_t RankShareSize(uint64_t n, uint64_t world_size);
// The global position of rank `rank`'s first sample: rank * RankShareSize(n, world_size).
uint64_t RankShareStart(uint64_t n, uint64_t world_size, uint64_t rank);

// Rank `rank`'s share of `epoch` (non-empty) among `world_size` ranks, as a WindowedEpoch of its own:
// `records` in the rank's walk order, `window_start` where each of its pieces starts.
std::shared_ptr<const WindowedEpoch> DealWindows(std::shared_ptr<const WindowedEpoch> epoch, uint64_t world_size,
                                                 uint64_t rank);

}  // namespace yc
