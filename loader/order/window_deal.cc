#include "loader/order/window_deal.h"

#include <algorithm>
#include <utility>

namespace yc {

uint64_t RankShareSize(uint64_t n, uint64_t world_size) { return (n + world_size - 1) / world_size; }

uint64_t RankShareStart(uint64_t n, uint64_t world_size, uint64_t rank) { return rank * RankShareSize(n, world_size); }

namespace {

// The epoch's order with every window that a rank boundary cuts split between its ranks by record
// index instead of by walk position: a shard stores records in index order, so each rank's part of the
// window is one run of bytes, and two neighbours share at most the block at the cut. Cut by walk
// position, the parts would interleave over the whole window (its records are shuffled) and each rank
// would fetch nearly all of it, since fetches go by block. Each part keeps the window's shuffled order.
std::vector<uint32_t> SplitCutWindows(const WindowedEpoch& epoch, uint64_t world_size) {
  std::vector<uint32_t> order = epoch.records;
  const uint64_t n = order.size(), size = RankShareSize(n, world_size);
  std::vector<std::pair<uint32_t, uint32_t>> parts;  // (part, record) of one window
  std::vector<uint32_t> by_index;
  for (uint32_t w = 0; w < epoch.windows(); ++w) {
    const uint64_t begin = epoch.window_start[w], end = epoch.window_start[w + 1];
    std::vector<uint64_t> cuts;  // the rank boundaries strictly inside the window
    for (uint64_t c = (begin / size + 1) * size; c < end; c += size) cuts.push_back(c - begin);
    if (cuts.empty()) continue;
    by_index.assign(order.begin() + begin, order.begin() + end);
    std::sort(by_index.begin(), by_index.end());
    // A record's part: how many cuts lie at or below its rank in index order.
    parts.clear();
    for (uint64_t p = begin; p < end; ++p) {
      const uint64_t rank_in_index =
          static_cast<uint64_t>(std::lower_bound(by_index.begin(), by_index.end(), order[p]) - by_index.begin());
      const uint32_t part =
          static_cast<uint32_t>(std::upper_bound(cuts.begin(), cuts.end(), rank_in_index) - cuts.begin());
      parts.push_back({part, order[p]});
    }
    std::stable_sort(parts.begin(), parts.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (uint64_t k = 0; k < parts.size(); ++k) order[begin + k] = parts[k].second;
  }
  return order;
}

}  // namespace

std::shared_ptr<const WindowedEpoch> DealWindows(std::shared_ptr<const WindowedEpoch> epoch, uint64_t world_size,
                                                 uint64_t rank) {
  if (world_size <= 1) return epoch;
  const uint64_t n = epoch->records.size();
  const uint64_t size = RankShareSize(n, world_size), first = RankShareStart(n, world_size, rank);
  const std::vector<uint32_t> order = SplitCutWindows(*epoch, world_size);
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
    share->records.push_back(order[q]);
  }
  share->window_start.push_back(static_cast<uint32_t>(size));
  return share;
}

}  // namespace yc
