// The windowed train order (issue 17): blocks, windows, partners inside the window, every record once
// per epoch, rank runs (window_deal_test.cc: the dealing itself), determinism and resume through the Loader, and a real multi-shard cache.
#include "loader/order/window_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "libcache/base/coding.h"
#include "libcache/cache.h"
#include "libcache/format/shard_format.h"
#include "loader/loader.h"
#include "loader/order/sampler.h"
#include "loader/render/processor.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"
#include "tests/loader/windowed_options.h"

namespace yc {
namespace {

using testing::FakeSource;

// In-memory records count imgsz^2 * 3 bytes each: at imgsz 64 that is 12,288, so a window of
// 100,000 bytes holds 8 records (blocks of 100,000 / 8 / 12,288 -> 1 record).
using testing::EpochHashes;
using testing::kImgsz;
using testing::kRecordBytes;

LoaderOptions OrderOptions(uint64_t window_bytes, int batch = 4, int rank = 0, int world = 1) {
  return testing::WindowedOptions(window_bytes, /*seed=*/7, batch, rank, world);
}

// Every (record, window) a rank's epoch hands out.
std::vector<SampleSlot> RankSlots(const RecordSource& src, const LoaderOptions& o, int epoch,
                                  std::shared_ptr<const WindowedEpoch>* windows = nullptr) {
  EpochSampler sampler(src.size(), o, {}, SplitIntoBlocks(src, o));
  sampler.SetEpoch(epoch);
  std::vector<SampleSlot> all, batch;
  cv::Size shape;
  for (size_t b = 0; b < sampler.batches_per_epoch(); ++b) {
    sampler.Batch(b, &batch, &shape);
    all.insert(all.end(), batch.begin(), batch.end());
  }
  if (windows) *windows = sampler.windows();
  return all;
}

TEST(WindowOrderTest, BlocksWithoutExtentsAreEqualRecordRuns) {
  const FakeSource src = FakeSource::Synthetic(50, 32);
  LoaderOptions o = OrderOptions(32 * kRecordBytes);  // blocks of 4 records
  const std::vector<RecordBlock> blocks = SplitIntoBlocks(src, o);
  ASSERT_EQ(blocks.size(), 13u);
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].begin, 4 * i);
    EXPECT_EQ(blocks[i].end, std::min<size_t>(50, 4 * i + 4));
    EXPECT_EQ(blocks[i].bytes, kRecordBytes * (blocks[i].end - blocks[i].begin));
  }
}

TEST(WindowOrderTest, EveryRecordOnceWindowsWithinBudgetAndMadeOfWholeBlocks) {
  const FakeSource src = FakeSource::Synthetic(103, 32);
  for (uint64_t window : {kRecordBytes, 8 * kRecordBytes, 20 * kRecordBytes + 5, 1000 * kRecordBytes}) {
    const LoaderOptions o = OrderOptions(window);
    const std::vector<RecordBlock> blocks = SplitIntoBlocks(src, o);
    std::map<uint32_t, size_t> block_of;
    for (size_t k = 0; k < blocks.size(); ++k)
      for (uint32_t r = blocks[k].begin; r < blocks[k].end; ++r) block_of[r] = k;
    for (int epoch : {0, 3}) {
      const auto e = MakeWindowedEpoch(blocks, o, epoch);
      std::vector<uint32_t> sorted = e->records;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i) << "window " << window;
      ASSERT_GE(e->windows(), 1u);
      for (uint32_t w = 0; w < e->windows(); ++w) {
        const PartnerDomain d = e->Partners(w);
        ASSERT_GT(d.size, 0u);
        EXPECT_LE(d.size * kRecordBytes, std::max(window, kRecordBytes)) << "window " << w;
        // A window is whole blocks: each block it touches lies inside it entirely.
        std::map<size_t, size_t> count;
        for (uint64_t i = 0; i < d.size; ++i) ++count[block_of[d.records[i]]];
        for (const auto& [k, c] : count) EXPECT_EQ(c, blocks[k].end - blocks[k].begin);
        for (uint64_t i = 0; i < d.size; ++i) EXPECT_EQ(e->WindowOf(e->window_start[w] + i), w);
      }
    }
  }
  // Windows of 8 records over 103: 13 windows, and another epoch gives another order.
  const LoaderOptions o = OrderOptions(8 * kRecordBytes);
  const auto blocks = SplitIntoBlocks(src, o);
  EXPECT_EQ(MakeWindowedEpoch(blocks, o, 0)->windows(), 13u);
  EXPECT_NE(MakeWindowedEpoch(blocks, o, 0)->records, MakeWindowedEpoch(blocks, o, 1)->records);
  EXPECT_EQ(MakeWindowedEpoch(blocks, o, 1)->records, MakeWindowedEpoch(blocks, o, 1)->records);
}

TEST(WindowOrderTest, RanksTakeContiguousRunsOfTheEpochCoveringEveryRecordOnceBesidesPadding) {
  const FakeSource src = FakeSource::Synthetic(47, 32);
  const std::vector<SampleSlot> single = RankSlots(src, OrderOptions(8 * kRecordBytes, 5), 2);
  ASSERT_EQ(single.size(), 47u);
  for (int world : {2, 3}) {
    const uint64_t share = (47 + world - 1) / world;
    std::map<uint64_t, int> visits;
    std::map<uint64_t, uint64_t> record_at;  // global position -> record
    for (int r = 0; r < world; ++r) {
      std::shared_ptr<const WindowedEpoch> windows;
      const std::vector<SampleSlot> slots = RankSlots(src, OrderOptions(8 * kRecordBytes, 5, r, world), 2, &windows);
      ASSERT_EQ(slots.size(), share);  // every rank runs as many samples: DDP's equal step counts
      for (size_t j = 0; j < slots.size(); ++j) {
        const SampleSlot& s = slots[j];
        ++visits[s.record];
        EXPECT_EQ(s.position, r * share + j);  // the rank's own contiguous run of the padded epoch
        EXPECT_TRUE(record_at.emplace(s.position, s.record).second) << "position " << s.position << " twice";
        EXPECT_EQ(s.window, windows->WindowOf(j));
      }
    }
    const size_t padded = share * world;
    EXPECT_EQ(visits.size(), 47u) << world << " ranks";
    int twice = 0;
    for (const auto& [record, n] : visits) {
      EXPECT_LE(n, 2);
      twice += n == 2;
    }
    EXPECT_EQ(static_cast<size_t>(twice), padded - 47) << world << " ranks";
    // The global order is the single-rank order, padded by repeating from its start, but for the records
    // inside a window that a rank boundary cuts (window_deal.h: split by record index).
    std::map<uint64_t, uint32_t> window_of;
    for (const SampleSlot& s : single) window_of[s.record] = s.window;
    for (const auto& [position, record] : record_at) EXPECT_EQ(window_of[record], single[position % 47].window) << position;
  }
}

TEST(WindowOrderTest, PartnersComeFromTheSamplesWindow) {
  const FakeSource src = FakeSource::Synthetic(60, 32);
  LoaderOptions o = OrderOptions(8 * kRecordBytes, 6);
  o.hyp.mixup = 1.0;  // mosaic is 1.0 by default: every sample draws 3 + 1 + 3 partners
  std::shared_ptr<const WindowedEpoch> windows;
  const std::vector<SampleSlot> slots = RankSlots(src, o, 1, &windows);
  ASSERT_EQ(slots.size(), 60u);
  SampleContext ctx{&src, &o, 1, false, windows};
  size_t partners = 0;
  std::set<uint32_t> windows_seen;
  for (const SampleSlot& s : slots) {
    const PartnerDomain d = PartnersOf(ctx, s);
    const std::set<uint64_t> members(d.records, d.records + d.size);
    EXPECT_LE(members.size(), 8u);
    EXPECT_TRUE(members.count(s.record)) << "sample " << s.record << " outside its own window";
    Rng rng(o.seed, 1, s.position);
    const TrainPlan plan = DrawTrainPlan(rng, s.record, d, o.hyp, false, o.imgsz);
    ASSERT_TRUE(plan.main.mosaic && plan.mixup && plan.mix.mosaic);
    std::vector<uint64_t> drawn(plan.main.partners.begin(), plan.main.partners.end());
    drawn.push_back(plan.mix.record);
    drawn.insert(drawn.end(), plan.mix.partners.begin(), plan.mix.partners.end());
    for (uint64_t p : drawn) EXPECT_TRUE(members.count(p)) << "partner " << p << " of " << s.record;
    partners += drawn.size();
    windows_seen.insert(s.window);
  }
  EXPECT_EQ(partners, 60u * 7);
  EXPECT_EQ(windows_seen.size(), 8u);  // ceil(60 / 8)
  // The default order's domain is the whole split, drawn exactly as before (Below(n)).
  SampleContext plain{&src, &o, 1, false, nullptr};
  const PartnerDomain whole = PartnersOf(plain, slots[0]);
  EXPECT_EQ(whole.records, nullptr);
  EXPECT_EQ(whole.size, 60u);
  Rng a(3, 4, 5), b(3, 4, 5);
  EXPECT_EQ(whole.Draw(a), b.Below(60));
}

TEST(WindowOrderTest, LoaderIsDeterministicAcrossThreadsAndResumesMidEpoch) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(22, kImgsz));
  LoaderOptions o = OrderOptions(6 * kRecordBytes, 3);
  o.hyp.mixup = 0.5;
  o.threads = 1;
  std::set<uint64_t> records;
  const std::vector<uint64_t> one = EpochHashes(src, o, 1, 0, &records);
  ASSERT_EQ(one.size(), 8u);
  EXPECT_EQ(records.size(), 22u);  // every record once in the epoch
  o.threads = 3;
  o.prefetch = 3;
  EXPECT_EQ(EpochHashes(src, o, 1), one);
  for (size_t k : {1u, 5u})
    EXPECT_EQ(EpochHashes(src, o, 1, k), std::vector<uint64_t>(one.begin() + k, one.end())) << "resume at " << k;
  EXPECT_NE(EpochHashes(src, o, 2), one);
  LoaderOptions shuffled = o;
  shuffled.order = SampleOrder::kShuffle;
  EXPECT_NE(EpochHashes(src, shuffled, 1), one);
}

// A real shard cache of several shards: blocks follow the files, and each window reads whole
// contiguous runs of a shard.
TEST(WindowOrderTest, ShardCacheWindowsAreContiguousExtents) {
  testing::TempDir dir;
  WriterOptions w;
  w.shard_size = 24 * 1024;
  const testing::TestCache built = testing::BuildTestCache(dir.path(), w, {{"train", 120}}, 40, true);
  auto cache = Cache::Open(dir.path());
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  const RecordSource& train = *cache.value()->split("train");
  ASSERT_EQ(train.size(), 120u);
  std::vector<RecordExtent> extents(train.size());
  std::set<uint32_t> files;
  for (size_t i = 0; i < train.size(); ++i) {
    ASSERT_TRUE(train.Extent(i, &extents[i]));
    files.insert(extents[i].file);
  }
  ASSERT_GE(files.size(), 3u);
  const LoaderOptions o = OrderOptions(160 * 1024);  // blocks of <= 20 KiB: a few records of <= 40x40
  const std::vector<RecordBlock> blocks = SplitIntoBlocks(train, o);
  ASSERT_GT(blocks.size(), files.size());
  size_t multi = 0;  // blocks of more than one record (so adjacency below is exercised)
  uint32_t next = 0;
  for (const RecordBlock& b : blocks) {
    EXPECT_EQ(b.begin, next);  // blocks tile the split in order
    next = b.end;
    const RecordExtent& first = extents[b.begin];
    const RecordExtent& last = extents[b.end - 1];
    EXPECT_EQ(b.bytes, last.offset + last.length - first.offset);
    EXPECT_TRUE(b.bytes <= BlockTargetBytes(o.window_bytes) || b.end - b.begin == 1);
    multi += b.end - b.begin > 1;
    for (uint32_t r = b.begin + 1; r < b.end; ++r) {
      EXPECT_EQ(extents[r].file, first.file);  // one data file
      // Back to back: only the shard's record alignment padding between them.
      const uint64_t prev_end = extents[r - 1].offset + extents[r - 1].length;
      EXPECT_EQ(extents[r].offset, AlignUp(prev_end, kShardRecordAlignment)) << "record " << r << " not adjacent";
    }
  }
  EXPECT_EQ(next, 120u);
  EXPECT_GT(multi, blocks.size() / 2);
  const auto e = MakeWindowedEpoch(blocks, o, 0);
  for (uint32_t wi = 0; wi < e->windows(); ++wi) {
    const PartnerDomain d = e->Partners(wi);
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < d.size; ++i) bytes += extents[d.records[i]].length;
    EXPECT_LE(bytes, o.window_bytes) << "window " << wi;
  }
  // The Loader walks it: every record once.
  std::shared_ptr<Cache> owner = std::move(cache.value());
  std::shared_ptr<const RecordSource> shared(owner, &train);
  std::set<uint64_t> records;
  LoaderOptions lo = o;
  lo.imgsz = 64;
  EXPECT_EQ(EpochHashes(shared, lo, 0, 0, &records).size(), 30u);
  EXPECT_EQ(records.size(), 120u);
}

}  // namespace
}  // namespace yc
