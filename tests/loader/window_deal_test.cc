// The windowed order dealt to data-parallel ranks (loader/order/window_deal.h): each rank a contiguous
// run of the padded epoch, the same sample count on every rank, every record once over the ranks besides
// the padding, pieces that never cross a window, a rank's records only in its own pieces (so a streamed
// rank fetches only its share), determinism from (seed, epoch, world_size, rank), another deal every
// epoch, and exact mid-epoch resume through the Loader under several ranks.
#include "loader/order/window_deal.h"

#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <set>

#include "loader/loader.h"
#include "loader/order/sampler.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"
#include "tests/loader/windowed_options.h"

namespace yc {
namespace {

using testing::FakeSource;

using testing::EpochHashes;
using testing::kImgsz;
using testing::kRecordBytes;

LoaderOptions DealOptions(uint64_t window_bytes, int batch = 4, int rank = 0, int world = 1) {
  return testing::WindowedOptions(window_bytes, /*seed=*/11, batch, rank, world);
}

std::shared_ptr<const WindowedEpoch> Epoch(const FakeSource& src, uint64_t window_bytes, int epoch) {
  const LoaderOptions o = DealOptions(window_bytes);
  return MakeWindowedEpoch(SplitIntoBlocks(src, o), o, epoch);
}

TEST(WindowDealTest, OneRankIsTheEpochItself) {
  const FakeSource src = FakeSource::Synthetic(40, 32);
  const std::shared_ptr<const WindowedEpoch> all = Epoch(src, 8 * kRecordBytes, 3);
  EXPECT_EQ(DealWindows(all, 1, 0), all);
  EXPECT_EQ(RankShareSize(40, 1), 40u);
  EXPECT_EQ(RankShareStart(40, 1, 0), 0u);
}

// For 2, 3, 4 and 7 ranks over 61 records in windows of 8: equal counts, every record once before the
// padding, pieces inside one window each, and each window's records split between the ranks with no
// record fetched by two (the padding aside).
TEST(WindowDealTest, RanksGetEqualCountsAndDisjointPiecesOfWholeWindows) {
  const FakeSource src = FakeSource::Synthetic(61, 32);
  const std::shared_ptr<const WindowedEpoch> all = Epoch(src, 8 * kRecordBytes, 2);
  ASSERT_GT(all->windows(), 6u);
  std::map<uint32_t, uint32_t> window_of;  // record -> its window in the epoch
  for (uint32_t w = 0; w < all->windows(); ++w)
    for (uint32_t p = all->window_start[w]; p < all->window_start[w + 1]; ++p) window_of[all->records[p]] = w;
  for (uint64_t world : {2u, 3u, 4u, 7u}) {
    const uint64_t share = RankShareSize(61, world), padding = share * world - 61;
    std::map<uint32_t, int> times;
    std::map<std::pair<uint32_t, uint64_t>, std::pair<uint32_t, uint32_t>> spans;  // (window, rank) -> index range
    for (uint32_t w = 0; w < all->windows(); ++w)
      for (uint64_t r = 0; r < world; ++r) spans[{w, r}] = {UINT32_MAX, 0};
    for (uint64_t r = 0; r < world; ++r) {
      const std::shared_ptr<const WindowedEpoch> mine = DealWindows(all, world, r);
      ASSERT_EQ(mine->records.size(), share) << world << " ranks, rank " << r;
      for (uint64_t j = 0; j < share; ++j) {
        const uint64_t p = RankShareStart(61, world, r) + j;
        EXPECT_EQ(window_of[mine->records[j]], all->WindowOf(p % 61)) << "rank " << r << " position " << p;
        ++times[mine->records[j]];
        if (p < 61) {  // the first pass: where each rank's records of a window lie in index order
          auto& span = spans[{window_of[mine->records[j]], r}];
          span.first = std::min(span.first, mine->records[j]);
          span.second = std::max(span.second, mine->records[j]);
        }
      }
      // Each piece lies inside one window of the epoch; consecutive pieces of one pass are other windows.
      size_t whole = 0;
      for (uint32_t k = 0; k < mine->windows(); ++k) {
        const PartnerDomain piece = mine->Partners(k);
        ASSERT_GT(piece.size, 0u);
        const uint32_t w = window_of[piece.records[0]];
        for (uint64_t i = 0; i < piece.size; ++i) EXPECT_EQ(window_of[piece.records[i]], w);
        whole += piece.size == all->window_start[w + 1] - all->window_start[w];
      }
      // All but the ends of the rank's run (and the padding's piece) are whole windows.
      EXPECT_GE(whole + 3, mine->windows()) << world << " ranks, rank " << r;
    }
    ASSERT_EQ(times.size(), 61u) << world << " ranks";
    uint64_t repeated = 0;
    for (const auto& [record, n] : times) {
      EXPECT_LE(n, 2);
      repeated += n - 1;
    }
    EXPECT_EQ(repeated, padding) << world << " ranks";
    // A window two ranks share is split by record index (one run of bytes each): the lower rank's part
    // lies wholly below the higher rank's.
    for (uint32_t w = 0; w < all->windows(); ++w)
      for (uint64_t r = 0; r + 1 < world; ++r) {
        const auto lower = spans[{w, r}], higher = spans[{w, r + 1}];
        if (lower.first == UINT32_MAX || higher.first == UINT32_MAX) continue;  // not shared
        EXPECT_LT(lower.second, higher.first) << "window " << w << ", ranks " << r << " and " << r + 1;
      }
  }
}

// The padding (positions past n) repeats the epoch's first records, as its own piece: the window stage
// keys it apart from window 0 of the first pass.
TEST(WindowDealTest, PaddingWrapsIntoItsOwnPiece) {
  const FakeSource src = FakeSource::Synthetic(10, 32);
  const std::shared_ptr<const WindowedEpoch> all = Epoch(src, 100 * kRecordBytes, 0);  // one window
  ASSERT_EQ(all->windows(), 1u);
  // 4 ranks of ceil(10 / 4) = 3: rank 3 takes positions 9, 10, 11, the last record of the window's split
  // (the highest index: the window is cut into the ranks' parts by index) and then the epoch's first two
  // again, which are rank 0's first two.
  const std::shared_ptr<const WindowedEpoch> last = DealWindows(all, 4, 3), first = DealWindows(all, 4, 0);
  ASSERT_EQ(last->records.size(), 3u);
  EXPECT_EQ(last->records[0], 9u);
  EXPECT_EQ(last->records[1], first->records[0]);
  EXPECT_EQ(last->records[2], first->records[1]);
  ASSERT_EQ(last->windows(), 2u);
  EXPECT_EQ(last->window_start[1], 1u);
}

// Through the sampler: the deal follows (seed, epoch) alone, and each epoch deals other records.
TEST(WindowDealTest, DeterministicAndDifferentEveryEpoch) {
  const FakeSource src = FakeSource::Synthetic(80, 32);
  auto records = [&](int rank, int epoch, uint64_t seed) {
    LoaderOptions o = DealOptions(8 * kRecordBytes, 4, rank, 2);
    o.seed = seed;
    EpochSampler sampler(src.size(), o, {}, SplitIntoBlocks(src, o));
    sampler.SetEpoch(epoch);
    std::set<uint64_t> out;
    std::vector<SampleSlot> batch;
    cv::Size shape;
    for (size_t b = 0; b < sampler.batches_per_epoch(); ++b) {
      sampler.Batch(b, &batch, &shape);
      for (const SampleSlot& s : batch) out.insert(s.record);
    }
    return out;
  };
  EXPECT_EQ(records(0, 1, 11), records(0, 1, 11));
  EXPECT_EQ(records(0, 1, 11).size(), 40u);
  EXPECT_NE(records(0, 1, 11), records(0, 2, 11));
  EXPECT_NE(records(0, 1, 11), records(0, 1, 12));
  std::set<uint64_t> both = records(0, 2, 11);
  for (uint64_t r : records(1, 2, 11)) EXPECT_TRUE(both.insert(r).second) << r << " dealt to both ranks";
  EXPECT_EQ(both.size(), 80u);
}

// Each rank's batches are the same at any thread count and from any batch on (mid-epoch resume under
// the same rank count), and the ranks' batches differ from each other.
TEST(WindowDealTest, EachRankResumesMidEpochExactly) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(30, kImgsz));
  for (int r = 0; r < 2; ++r) {
    LoaderOptions o = DealOptions(6 * kRecordBytes, 3, r, 2);
    o.hyp.mixup = 0.5;
    o.threads = 1;
    const std::vector<uint64_t> whole = EpochHashes(src, o, 1);
    ASSERT_EQ(whole.size(), 5u);  // 15 samples a rank, 3 a batch
    o.threads = 3;
    for (size_t k : {1u, 3u})
      EXPECT_EQ(EpochHashes(src, o, 1, k), std::vector<uint64_t>(whole.begin() + k, whole.end())) << "rank " << r;
    LoaderOptions other = o;
    other.rank = 1 - r;
    EXPECT_NE(EpochHashes(src, other, 1), whole);
  }
}

}  // namespace
}  // namespace yc
