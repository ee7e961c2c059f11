#include "loader/order/window_deal.h"

namespace yc {

uint64_t RankShareSize(uint64_t n, uint64_t world_size) { return (n + world_size - 1) / world_size; }

uint64_t RankShareStart(uint64_t n, uint64_t world_size, uint64_t rank) { return rank * RankShareSize(n, world_size); }

std::shared_ptr<const WindowedEpoch> DealWindows(std::shared_ptr<const WindowedEpoch> epoch, uint64_t world_size,
                                                 uint64_t rank) {
  if (world_size <= 1) return epoch;
  const uint64_t n = epoch->records.size();
  const uint64_t size = RankShareSize(n, world_size), first = RankShareStart(n, world_size, rank);
  auto share = std::make_shared<WindowedEpoch>();
  share->records.reserve(size);
  share->window_start.push_back(0);
  uint64_t piece_pass = 0;
  uint32_t piece_window = 0;
  for (uint64_t j = 0; j < size; ++j) {
    const uint64_t p = first + j, q = p % n, pass = p / n;
    const uint32_t w = epoch->WindowOf(q);
    // A new piece where the epoch's window changes, and where the padding wraps to the epoch's start
    // (the same window again, but another pass: other samples, keyed apart by the window stage).
    if (j > 0 && (w != piece_window || pass != piece_pass)) share->window_start.push_back(static_cast<uint32_t>(j));
    piece_window = w;
    piece_pass = pass;
    share->records.push_back(epoch->records[q]);
  }
  share->window_start.push_back(static_cast<uint32_t>(size));
  return share;
}

}  // namespace yc
