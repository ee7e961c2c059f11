#include "loader/order/window_order.h"

#include <algorithm>
#include <numeric>

#include "loader/base/rng.h"

namespace yc {

uint64_t BlockTargetBytes(uint64_t window_bytes) {
  constexpr uint64_t kMaxBlock = 64ull << 20;
  return std::max<uint64_t>(1, std::min(kMaxBlock, window_bytes / 8));
}

std::vector<RecordBlock> SplitIntoBlocks(const RecordSource& source, const LoaderOptions& o) {
  const size_t n = source.size();
  const uint64_t target = BlockTargetBytes(o.window_bytes);
  std::vector<RecordBlock> blocks;
  RecordExtent first, prev, e;
  if (n > 0 && source.Extent(0, &first)) {
    RecordBlock b{0, 1, first.length};
    prev = first;
    for (size_t i = 1; i < n; ++i) {
      // A record without an extent (should not happen in a file-backed source) starts its own block.
      const bool known = source.Extent(i, &e);
      const bool follows = known && e.file == prev.file && e.offset >= prev.offset + prev.length;
      const uint64_t grown = follows ? e.offset + e.length - first.offset : 0;
      if (follows && grown <= target) {
        b.end = static_cast<uint32_t>(i + 1);
        b.bytes = grown;
      } else {
        blocks.push_back(b);
        if (!known) e = RecordExtent{prev.file, prev.offset + prev.length, 0};
        first = e;
        b = RecordBlock{static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1), e.length};
      }
      prev = e;
    }
    blocks.push_back(b);
    return blocks;
  }
  // No extents: records of a nominal imgsz^2 * 3 bytes, equal counts per block.
  const uint64_t nominal = 3ull * static_cast<uint64_t>(o.imgsz) * static_cast<uint64_t>(o.imgsz);
  const size_t per_block = static_cast<size_t>(std::max<uint64_t>(1, target / nominal));
  for (size_t i = 0; i < n; i += per_block) {
    const size_t end = std::min(n, i + per_block);
    blocks.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(end), nominal * (end - i)});
  }
  return blocks;
}

uint32_t WindowedEpoch::WindowOf(uint64_t p) const {
  // window_start[0] = 0 <= p, so the first start above p is never the first entry.
  const auto it = std::upper_bound(window_start.begin(), window_start.end(), p);
  return static_cast<uint32_t>(it - window_start.begin() - 1);
}

std::shared_ptr<const WindowedEpoch> MakeWindowedEpoch(const std::vector<RecordBlock>& blocks,
                                                       const LoaderOptions& o, int epoch) {
  auto e = std::make_shared<WindowedEpoch>();
  Rng rng(o.seed, static_cast<uint64_t>(epoch), 0, RngStream::kWindowed);
  std::vector<uint32_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0u);
  if (o.shuffle)
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  size_t n = 0;
  for (const RecordBlock& b : blocks) n += b.end - b.begin;
  e->records.reserve(n);
  e->window_start.push_back(0);
  uint64_t window = 0;  // bytes in the open window
  for (uint32_t k : order) {
    const RecordBlock& b = blocks[k];
    // Close the open window when this block would overflow it; a block alone is never split.
    if (window > 0 && window + b.bytes > o.window_bytes) {
      e->window_start.push_back(static_cast<uint32_t>(e->records.size()));
      window = 0;
    }
    for (uint32_t r = b.begin; r < b.end; ++r) e->records.push_back(r);
    window += b.bytes;
  }
  e->window_start.push_back(static_cast<uint32_t>(e->records.size()));
  if (o.shuffle)
    for (size_t w = 0; w + 1 < e->window_start.size(); ++w) {
      uint32_t* first = e->records.data() + e->window_start[w];
      for (size_t i = e->window_start[w + 1] - e->window_start[w]; i > 1; --i) std::swap(first[i - 1], first[rng.Below(i)]);
    }
  return e;
}

}  // namespace yc
