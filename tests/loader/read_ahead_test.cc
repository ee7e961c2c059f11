// Reading ahead on real caches. Read-ahead (loader/io/read_ahead.h) names exactly the records the workers
// read, stays within its byte budget, and never changes a batch; the windowed order's window stage
// (loader/io/window_stage.h) serves every record from its own buffers, bounded, and never changes a batch.
#include "loader/io/read_ahead.h"
#include "loader/io/window_stage.h"
#include "loader/order/window_order.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "libcache/cache.h"
#include "loader/loader.h"
#include "loader/render/processor.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/loader/test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::BuildTestCache;
using testing::HashBatch;
using testing::TempDir;

struct Built {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::shared_ptr<Cache> cache;
  std::shared_ptr<const RecordSource> train;
};

Built BuildCache(Backend backend, Codec codec) {
  Built b;
  WriterOptions w;
  w.backend = backend;
  w.codec = codec;
  w.shard_size = 64 * 1024;  // several shards: extents in different files
  BuildTestCache(b.dir->path(), w, {{"train", 40}}, 48, true);
  auto opened = Cache::Open(b.dir->path());
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  b.cache = std::move(opened.value());
  b.train = std::shared_ptr<const RecordSource>(b.cache, b.cache->split("train"));
  return b;
}

LoaderOptions Options() {
  LoaderOptions o;
  o.batch = 6;
  o.imgsz = 64;
  o.epochs = 3;
  o.hyp.mixup = 0.5;  // mix partners and their mosaic partners are read too
  o.hyp.close_mosaic = 1;  // the last epoch reads one record a sample
  o.prefetch = 2;
  return o;
}

// Logs every record a worker reads, in order.
class RecordingSource : public RecordSource {
 public:
  explicit RecordingSource(std::shared_ptr<const RecordSource> inner) : inner_(std::move(inner)) {}
  size_t size() const override { return inner_->size(); }
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override {
    std::lock_guard<std::mutex> lock(mu_);
    reads_.push_back(index);
    return inner_->Read(index, out, scratch);
  }
  bool Extent(size_t index, RecordExtent* out) const override { return inner_->Extent(index, out); }
  std::vector<uint64_t> reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }

 private:
  std::shared_ptr<const RecordSource> inner_;
  mutable std::mutex mu_;
  mutable std::vector<uint64_t> reads_;
};

// RecordsOfSample, with the context MakeSampleContext gives the read-ahead walk, lists exactly what
// ProcessSample reads, sample after sample, across the close_mosaic switch, in both orders (the
// windowed order draws partners inside the sample's window). One thread: the reads come in order.
TEST(ReadAheadTest, RecordsOfSampleAreTheRecordsTheWorkersRead) {
  Built b = BuildCache(Backend::kShards, Codec{});
  for (SampleOrder order : {SampleOrder::kShuffle, SampleOrder::kWindowed}) {
    SCOPED_TRACE(order == SampleOrder::kWindowed ? "windowed" : "shuffle");
    auto recording = std::make_shared<RecordingSource>(b.train);
    LoaderOptions o = Options();
    o.threads = 1;
    o.prefetch = 1;
    o.epochs = 2;
    o.order = order;
    RecordExtent e;
    ASSERT_TRUE(b.train->Extent(0, &e));
    o.window_bytes = 12 * e.length;  // several windows in the 40 records
    auto loader = Loader::Create(recording, o);
    ASSERT_TRUE(loader.ok());
    EpochSampler sampler(recording->size(), o, {},
                         order == SampleOrder::kWindowed ? SplitIntoBlocks(*b.train, o) : std::vector<RecordBlock>{});
    std::vector<uint64_t> expected;
    size_t mixups = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {
      ASSERT_TRUE((*loader)->StartEpoch(epoch).ok());
      std::shared_ptr<Batch> batch;
      while ((*loader)->Next(&batch).ok() && batch) {}
      sampler.SetEpoch(epoch);
      const SampleContext ctx = MakeSampleContext(recording.get(), &o, epoch, sampler);
      if (order == SampleOrder::kWindowed) {
        ASSERT_GT(ctx.windows->windows(), 1u);
      }
      for (size_t k = 0; k < sampler.batches_per_epoch(); ++k) {
        std::vector<SampleSlot> samples;
        cv::Size shape;
        sampler.Batch(k, &samples, &shape);
        for (const SampleSlot& s : samples) {
          const size_t before = expected.size();
          RecordsOfSample(ctx, s, &expected);
          mixups += expected.size() - before > 4;
        }
      }
    }
    loader.value().reset();
    EXPECT_GT(mixups, 0u);  // the test covers the mixup partners
    // The loader ran ahead into epoch 1 before epoch 0 ended, which is the same order.
    EXPECT_EQ(recording->reads(), expected);
  }
}

// With no worker starting a sample, the thread requests at most the budget, and it moves on as
// the workers start samples.
TEST(ReadAheadTest, RequestsStayWithinTheBudget) {
  Built b = BuildCache(Backend::kShards, Codec{});
  RecordExtent e;
  ASSERT_TRUE(b.train->Extent(0, &e));
  LoaderOptions o = Options();
  o.read_ahead_bytes = 10 * e.length;  // a few samples' worth
  EpochSampler sampler(b.train->size(), o, {});
  ReadAhead ra(b.train.get(), &o, sampler);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(ra.requested_bytes(), 0u);  // nothing before Restart
  ra.Restart(0, 0);
  auto wait_for_more_than = [&](uint64_t bytes) {
    for (int i = 0; i < 500 && ra.requested_bytes() <= bytes; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return ra.requested_bytes();
  };
  const uint64_t first = wait_for_more_than(0);
  EXPECT_GT(first, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // give it time to overrun, if it would
  EXPECT_LE(ra.requested_bytes(), o.read_ahead_bytes);
  for (int i = 0; i < 20; ++i) ra.SampleStarted();
  EXPECT_GT(wait_for_more_than(ra.requested_bytes()), first);
  EXPECT_LE(ra.peak_outstanding_bytes(), o.read_ahead_bytes);
  ra.Restart(1, 2);  // restarts mid-walk and is destroyed mid-walk: joins cleanly
}

// Hashes of epochs 0..2 read consecutively (the loader runs ahead across each boundary), then a
// restart in the middle of epoch 1.
std::vector<uint64_t> Hashes(std::shared_ptr<const RecordSource> source, LoaderOptions o) {
  auto loader = Loader::Create(std::move(source), o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<uint64_t> out;
  auto epoch = [&](int e, size_t first) {
    EXPECT_TRUE((*loader)->StartEpoch(e, first).ok());
    std::shared_ptr<Batch> batch;
    while ((*loader)->Next(&batch).ok() && batch) out.push_back(HashBatch(*batch));
  };
  for (int e = 0; e < o.epochs; ++e) epoch(e, 0);
  epoch(1, 3);
  return out;
}

TEST(ReadAheadTest, BatchesAreTheSameAtAnyBudgetAndThreadCount) {
  for (const testing::StorageCase& c : testing::FileBackedCases()) {
    SCOPED_TRACE(c.name());
    Built b = BuildCache(c.backend, c.codec);
    RecordExtent e;
    ASSERT_TRUE(b.train->Extent(0, &e));  // file-backed: the loader does read ahead
    LoaderOptions o = Options();
    o.threads = 1;
    o.read_ahead_bytes = 0;
    const std::vector<uint64_t> reference = Hashes(b.train, o);
    ASSERT_EQ(reference.size(), 3 * 7 + 4u);  // 40 records / 6 = 7 batches an epoch, 4 after the restart
    for (int threads : {1, 2})
      for (uint64_t budget : {uint64_t{1}, 3 * e.length, uint64_t{1} << 30}) {
        o.threads = threads;
        o.read_ahead_bytes = budget;
        EXPECT_EQ(Hashes(b.train, o), reference) << threads << " threads, budget " << budget;
      }
  }
}

// The windowed order with windows of about `records` records and the least read-ahead: the window
// stage then holds two slots, the window in use and the next.
LoaderOptions TwoSlotWindows(const RecordSource& train, uint64_t records) {
  RecordExtent e;
  EXPECT_TRUE(train.Extent(0, &e));
  LoaderOptions o = Options();
  o.order = SampleOrder::kWindowed;
  o.window_bytes = records * e.length;
  o.read_ahead_bytes = 1;
  return o;
}

// The window stage against the page-cache path: the same batches in the windowed order, at one and
// two threads, with one window ahead or many, over small windows (many per epoch, across shards),
// for ranks whose padding wraps into the first window again, across epochs and a mid-epoch restart.
TEST(WindowStageTest, BatchesAreTheSameAsThroughThePageCache) {
  for (const testing::StorageCase& c : testing::FileBackedCases()) {
    SCOPED_TRACE(c.name());
    Built b = BuildCache(c.backend, c.codec);
    ASSERT_TRUE(WindowStage::Supports(*b.train));
    RecordExtent e;
    ASSERT_TRUE(b.train->Extent(0, &e));
    for (int world : {1, 3}) {  // 40 records over 3 ranks: padded to 42 from the start of the order
      LoaderOptions o = Options();
      o.order = SampleOrder::kWindowed;
      o.window_bytes = 5 * e.length;
      o.world_size = world;
      o.rank = world - 1;
      o.threads = 1;
      o.window_io = WindowIo::kPageCache;
      o.read_ahead_bytes = 0;
      const std::vector<uint64_t> reference = Hashes(b.train, o);
      ASSERT_GE(reference.size(), 3u);
      o.window_io = WindowIo::kDirect;
      for (int threads : {1, 2})
        for (uint64_t ahead : {uint64_t{1}, uint64_t{1} << 30}) {
          o.threads = threads;
          o.read_ahead_bytes = ahead;
          EXPECT_EQ(Hashes(b.train, o), reference) << world << " ranks, " << threads << " threads, " << ahead;
        }
    }
  }
}

// Walking one epoch through the stage by hand: every record a sample reads comes from the stage's
// own buffer (not the source's mapping) with the source's bytes; each window is read once; the
// buffers never hold more than the slots' windows.
TEST(WindowStageTest, ServesEachWindowFromItsOwnBufferOnce) {
  Built b = BuildCache(Backend::kShards, Codec{});
  LoaderOptions o = TwoSlotWindows(*b.train, 6);
  o.epochs = 1;
  std::vector<RecordBlock> blocks = SplitIntoBlocks(*b.train, o);
  EpochSampler sampler(b.train->size(), o, {}, blocks);
  WindowStage stage(b.train.get(), &o, sampler);
  SampleSlot first;
  first.position = 0;
  EXPECT_EQ(stage.Acquire(0, first), nullptr);  // nothing before Restart (and no wait)
  stage.Restart(0, 0);
  const auto windows = sampler.windows();
  ASSERT_GT(windows->windows(), 2u);
  ScratchBuffer scratch, scratch2;
  uint64_t record_bytes = 0;
  for (size_t batch = 0; batch < sampler.batches_per_epoch(); ++batch) {
    std::vector<SampleSlot> samples;
    cv::Size shape;
    sampler.Batch(batch, &samples, &shape);
    for (const SampleSlot& s : samples) {
      const RecordSource* records = stage.Acquire(0, s);
      ASSERT_NE(records, nullptr);
      const PartnerDomain window = windows->Partners(s.window);
      for (uint64_t k = 0; k < window.size; ++k) {
        const uint64_t r = window.records[k];
        RecordView staged, mapped;
        ASSERT_TRUE(records->Read(r, &staged, &scratch).ok());
        ASSERT_TRUE(b.train->Read(r, &mapped, &scratch2).ok());
        ASSERT_EQ(staged.height, mapped.height);
        ASSERT_EQ(staged.width, mapped.width);
        EXPECT_NE(staged.pixels, mapped.pixels);  // raw shards: the mapping's bytes vs the stage's copy
        EXPECT_EQ(std::memcmp(staged.pixels, mapped.pixels, size_t(mapped.height) * mapped.width * 3), 0);
        EXPECT_EQ(staged.box_count, mapped.box_count);
      }
      stage.Release(records);
    }
  }
  for (size_t w = 0; w < windows->windows(); ++w) {
    const PartnerDomain window = windows->Partners(static_cast<uint32_t>(w));
    for (uint64_t k = 0; k < window.size; ++k) {
      RecordExtent x;
      ASSERT_TRUE(b.train->Extent(window.records[k], &x));
      record_bytes += x.length;
    }
  }
  EXPECT_EQ(stage.windows_staged(), windows->windows());  // each window read once
  EXPECT_GE(stage.staged_bytes(), record_bytes);
  EXPECT_LE(stage.staged_bytes(), record_bytes + windows->windows() * 2 * (DirectFile::kAlignment + (64u << 10)));
  // Two slots, each allocated once with 1/8 headroom over the larger of the window and its read.
  const uint64_t slot = (o.window_bytes + 4 * (DirectFile::kAlignment + (64u << 10))) / 8 * 9 + DirectFile::kAlignment;
  EXPECT_LE(stage.peak_buffer_bytes(), 2 * slot);
  std::printf("stage: %llu windows, %llu bytes, O_DIRECT: %s\n", (unsigned long long)stage.windows_staged(),
              (unsigned long long)stage.staged_bytes(), stage.all_direct() ? "yes" : "no (page cache)");
}

// A worker waiting for a window that cannot come yet (both slots hold windows no one releases) is
// woken by Cancel with nullptr: the loader's cancel never hangs on the stage.
TEST(WindowStageTest, CancelWakesAWorkerWaitingForAWindow) {
  Built b = BuildCache(Backend::kShards, Codec{});
  const LoaderOptions o = TwoSlotWindows(*b.train, 4);
  std::vector<RecordBlock> blocks = SplitIntoBlocks(*b.train, o);
  EpochSampler sampler(b.train->size(), o, {}, blocks);
  ASSERT_GT(sampler.windows()->windows(), 3u);
  WindowStage stage(b.train.get(), &o, sampler);
  stage.Restart(0, 0);
  SampleSlot far;  // a sample of the fourth window: two slots, neither ever released
  far.position = sampler.windows()->window_start[3];
  far.window = 3;
  auto waiting = std::async(std::launch::async, [&] { return stage.Acquire(0, far); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  stage.Cancel();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(waiting.get(), nullptr);
}

// bench --cold: RestartPipeline drops what was read ahead and launched, and the batches go on as if
// nothing happened, with the stage and with page-cache read-ahead.
TEST(WindowStageTest, RestartPipelineKeepsTheBatches) {
  Built b = BuildCache(Backend::kShards, Codec{});
  RecordExtent e;
  ASSERT_TRUE(b.train->Extent(0, &e));
  for (WindowIo io : {WindowIo::kDirect, WindowIo::kPageCache}) {
    LoaderOptions o = Options();
    o.order = SampleOrder::kWindowed;
    o.window_bytes = 5 * e.length;
    o.window_io = io;
    o.threads = 2;
    auto run = [&](bool restart) {
      auto loader = Loader::Create(b.train, o);
      EXPECT_TRUE(loader.ok());
      std::vector<uint64_t> out;
      for (int epoch = 0; epoch < 2; ++epoch) {
        EXPECT_TRUE((*loader)->StartEpoch(epoch).ok());
        std::shared_ptr<Batch> batch;
        while ((*loader)->Next(&batch).ok() && batch) {
          out.push_back(HashBatch(*batch));
          if (restart && out.size() % 3 == 0) (*loader)->RestartPipeline();
        }
      }
      return out;
    };
    EXPECT_EQ(run(true), run(false)) << (io == WindowIo::kDirect ? "direct" : "page cache");
  }
}

}  // namespace
}  // namespace yc
