// The public Loader: determinism, resume, ranks, epochs, close_mosaic, val, layouts, errors, shutdown.
#include "loader/loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "loader/ops/letterbox.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

using testing::BatchImage;
using testing::FakeSource;
using testing::SmallTrainOptions;
using testing::HashBatch;

std::shared_ptr<FakeSource> Source(size_t n, int long_side = 128, uint32_t seed = 1) {
  return std::make_shared<FakeSource>(FakeSource::Synthetic(n, long_side, seed));
}


std::unique_ptr<Loader> Make(std::shared_ptr<const RecordSource> src, const LoaderOptions& o) {
  auto r = Loader::Create(std::move(src), o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r.value()) : nullptr;
}

// Hashes of every batch of an epoch.
std::vector<uint64_t> EpochHashes(Loader* loader, int epoch, size_t first = 0) {
  std::vector<uint64_t> out;
  EXPECT_TRUE(loader->StartEpoch(epoch, first).ok());
  std::shared_ptr<Batch> b;
  for (;;) {
    const Status st = loader->Next(&b);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok() || !b) break;
    out.push_back(HashBatch(*b));
  }
  return out;
}

TEST(LoaderTest, BatchContract) {
  auto src = Source(10);
  auto loader = Make(src, SmallTrainOptions(4));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->batches_per_epoch(), 3u);
  ASSERT_TRUE(loader->StartEpoch(0).ok());
  std::shared_ptr<Batch> b;
  size_t seen = 0;
  std::set<uint64_t> records;
  for (size_t i = 0;; ++i) {
    ASSERT_TRUE(loader->Next(&b).ok());
    if (!b) break;
    EXPECT_EQ(b->index, i);
    EXPECT_EQ(b->epoch, 0);
    EXPECT_EQ(b->height, 128);
    EXPECT_EQ(b->width, 128);
    EXPECT_EQ(b->size, i < 2 ? 4 : 2);
    EXPECT_EQ(b->samples.size(), static_cast<size_t>(b->size));
    EXPECT_EQ(b->labels.size() % 6, 0u);
    for (size_t r = 0; r < b->label_count(); ++r) {
      const float* row = &b->labels[r * 6];
      EXPECT_GE(row[0], 0);
      EXPECT_LT(row[0], b->size);
      if (r > 0) {
        EXPECT_GE(row[0], b->labels[(r - 1) * 6]);  // grouped by image, in order
      }
      for (int k = 2; k < 6; ++k) {
        EXPECT_GE(row[k], 0.0f);
        EXPECT_LE(row[k], 1.0f + 1e-6f);
      }
      EXPECT_LE(row[2] - row[4] / 2, 1.0f + 1e-5f);
    }
    for (const SampleInfo& s : b->samples) {
      records.insert(s.record);
      EXPECT_EQ(s.source, "images/img" + std::to_string(s.record) + ".jpg");
      EXPECT_EQ(s.orig_h, 2 * src->record(s.record).height);
    }
    seen += b->size;
  }
  EXPECT_EQ(seen, 10u);
  EXPECT_EQ(records.size(), 10u);
  ASSERT_TRUE(loader->Next(&b).ok());  // stays at the end
  EXPECT_FALSE(b);
}

TEST(LoaderTest, DeterministicAcrossThreadCountsAndRuns) {
  auto src = Source(24);
  std::vector<uint64_t> reference;
  for (int threads : {1, 2, 8}) {
    for (int prefetch : {1, 3}) {
      LoaderOptions o = SmallTrainOptions(5);
      o.threads = threads;
      o.prefetch = prefetch;
      auto loader = Make(src, o);
      ASSERT_TRUE(loader);
      const auto hashes = EpochHashes(loader.get(), 2);
      ASSERT_EQ(hashes.size(), 5u);
      if (reference.empty())
        reference = hashes;
      else
        EXPECT_EQ(hashes, reference) << threads << " threads, prefetch " << prefetch;
    }
  }
  // Another seed gives other batches.
  LoaderOptions o = SmallTrainOptions(5);
  o.seed = 43;
  auto other = Make(src, o);
  EXPECT_NE(EpochHashes(other.get(), 2), reference);
}

TEST(LoaderTest, ResumeFromBatchKEqualsFullEpoch) {
  auto src = Source(20);
  auto loader = Make(src, SmallTrainOptions(3));
  const auto full = EpochHashes(loader.get(), 5);
  ASSERT_EQ(full.size(), 7u);
  for (size_t k : {1u, 4u, 6u}) {
    auto resumed = Make(src, SmallTrainOptions(3));
    const auto tail = EpochHashes(resumed.get(), 5, k);
    EXPECT_EQ(tail, std::vector<uint64_t>(full.begin() + k, full.end())) << "resume at " << k;
  }
  // Restarting mid-epoch on the same loader works too, and k = batches gives an empty epoch.
  EXPECT_EQ(EpochHashes(loader.get(), 5, 4), std::vector<uint64_t>(full.begin() + 4, full.end()));
  EXPECT_TRUE(EpochHashes(loader.get(), 5, 7).empty());
  EXPECT_FALSE(loader->StartEpoch(5, 8).ok());
}

TEST(LoaderTest, EpochsDifferAndRepeat) {
  auto src = Source(12);
  auto loader = Make(src, SmallTrainOptions(4));
  const auto e0 = EpochHashes(loader.get(), 0);
  const auto e1 = EpochHashes(loader.get(), 1);
  const auto e0_again = EpochHashes(loader.get(), 0);
  EXPECT_EQ(e0, e0_again);
  for (size_t i = 0; i < e0.size(); ++i) EXPECT_NE(e0[i], e1[i]);
}

// At an epoch's end the workers run ahead into the next epoch; what they made must be what a fresh
// loader makes for that epoch, across the close_mosaic switch, whether StartEpoch adopts the batches
// (epoch + 1 from batch 0) or discards them (any other start). No run-ahead past options.epochs.
TEST(LoaderTest, RunAheadIntoTheNextEpochEqualsAFreshStart) {
  auto src = Source(10);
  LoaderOptions o = SmallTrainOptions(4);  // 3 batches an epoch
  o.prefetch = 3;
  o.epochs = 4;
  o.hyp.close_mosaic = 2;  // epochs 2 and 3 are letterbox epochs
  std::vector<std::vector<uint64_t>> fresh;
  for (int e = 0; e < 4; ++e) {
    auto loader = Make(src, o);
    ASSERT_TRUE(loader);
    fresh.push_back(EpochHashes(loader.get(), e));
    ASSERT_EQ(fresh.back().size(), 3u);
  }
  auto loader = Make(src, o);
  ASSERT_TRUE(loader);
  for (int e = 0; e < 4; ++e) EXPECT_EQ(EpochHashes(loader.get(), e), fresh[e]) << "consecutive epoch " << e;
  // The last epoch launches nothing ahead: the sample count stays at 4 epochs' worth.
  const uint64_t samples = loader->stats().samples;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(loader->stats().samples, samples);
  EXPECT_EQ(samples, 4u * 10u);

  auto other = Make(src, o);
  ASSERT_TRUE(other);
  EXPECT_EQ(EpochHashes(other.get(), 0), fresh[0]);
  EXPECT_EQ(EpochHashes(other.get(), 1, 1), std::vector<uint64_t>(fresh[1].begin() + 1, fresh[1].end()));
  EXPECT_EQ(EpochHashes(other.get(), 3), fresh[3]);  // skips epoch 2, which had been launched ahead
  EXPECT_EQ(EpochHashes(other.get(), 1), fresh[1]);  // back to an earlier epoch
}

// SetEpochs (time= recomputes the count after every epoch): the batches launched ahead under the old count
// are dropped, and the next epoch is what a fresh loader with the new count makes, across close_mosaic.
TEST(LoaderTest, SetEpochsEqualsAFreshLoaderWithThatCount) {
  auto src = Source(10);
  LoaderOptions o = SmallTrainOptions(4);
  o.prefetch = 3;
  o.epochs = 10;
  o.hyp.close_mosaic = 2;  // with 10 epochs epoch 1 is a mosaic epoch; with 3 a letterbox one
  LoaderOptions three = o;
  three.epochs = 3;
  auto fresh = Make(src, three);
  ASSERT_TRUE(fresh);
  const auto expected = EpochHashes(fresh.get(), 1);
  auto loader = Make(src, o);
  ASSERT_TRUE(loader);
  const auto mosaic_epoch1 = EpochHashes(Make(src, o).get(), 1);
  EpochHashes(loader.get(), 0);  // drains epoch 0: epoch 1 is launched ahead with the count 10
  ASSERT_TRUE(loader->SetEpochs(3).ok());
  EXPECT_EQ(loader->options().epochs, 3);
  EXPECT_EQ(EpochHashes(loader.get(), 1), expected);
  EXPECT_NE(expected, mosaic_epoch1);  // the count mattered
  EXPECT_TRUE(loader->SetEpochs(3).ok());  // unchanged: nothing dropped
  EXPECT_FALSE(loader->SetEpochs(0).ok());
}

TEST(LoaderTest, RankSamplesAreTheSingleProcessSamples) {
  // A sample's stream is keyed by its global position, so rank r's i-th image equals image
  // (i * W + r) of the single-process epoch (same permutation, batch size 1 for easy indexing).
  auto src = Source(9);
  LoaderOptions o = SmallTrainOptions(1);
  auto single = Make(src, o);
  const auto all = EpochHashes(single.get(), 3);
  ASSERT_EQ(all.size(), 9u);
  std::multiset<uint64_t> from_ranks;
  for (int r = 0; r < 2; ++r) {
    o.rank = r, o.world_size = 2;
    auto loader = Make(src, o);
    const auto hashes = EpochHashes(loader.get(), 3);
    ASSERT_EQ(hashes.size(), 5u);  // ceil(9 / 2)
    for (size_t i = 0; i < hashes.size(); ++i) {
      const size_t p = i * 2 + r;
      if (p < 9) {
        EXPECT_EQ(hashes[i], all[p]) << "rank " << r << " sample " << i;
      }
    }
  }
}

TEST(LoaderTest, CloseMosaicSwitchesToLetterboxPath) {
  // No scale/translate/HSV/flip: after close_mosaic each image is exactly its letterboxed record.
  auto src = Source(6);
  LoaderOptions o = SmallTrainOptions(2);
  o.hyp.scale = 0, o.hyp.translate = 0, o.hyp.fliplr = 0;
  o.hyp.hsv_h = o.hyp.hsv_s = o.hyp.hsv_v = 0;
  o.epochs = 10, o.hyp.close_mosaic = 3;
  auto loader = Make(src, o);
  for (int epoch : {6, 7}) {
    ASSERT_TRUE(loader->StartEpoch(epoch).ok());
    std::shared_ptr<Batch> b;
    int letterboxed = 0;
    while (loader->Next(&b).ok() && b) {
      for (int i = 0; i < b->size; ++i) {
        const auto& rec = src->record(b->samples[i].record);
        cv::Mat img(rec.height, rec.width, CV_8UC3, const_cast<uint8_t*>(rec.pixels.data())), expected;
        LetterboxImage(img, ComputeLetterbox(rec.height, rec.width, 128, 128, true), &expected);
        letterboxed += testing::CompareImages(expected, BatchImage(*b, i)).max_abs == 0;
      }
    }
    if (epoch == 6)
      EXPECT_EQ(letterboxed, 0) << "epoch 6 < 10 - 3 still uses mosaic";
    else
      EXPECT_EQ(letterboxed, 6) << "epoch 7 >= 10 - 3 has mosaic closed";
  }
}

TEST(LoaderTest, NhwcAndNchwCarryTheSameContent) {
  auto src = Source(8);
  LoaderOptions o = SmallTrainOptions(4);
  auto nchw = Make(src, o);
  o.layout = ImageLayout::kNHWC;
  auto nhwc = Make(src, o);
  ASSERT_TRUE(nchw->StartEpoch(1).ok());
  ASSERT_TRUE(nhwc->StartEpoch(1).ok());
  std::shared_ptr<Batch> a, b;
  while (nchw->Next(&a).ok() && a) {
    ASSERT_TRUE(nhwc->Next(&b).ok());
    ASSERT_TRUE(b);
    EXPECT_EQ(a->labels, b->labels);
    for (int i = 0; i < a->size; ++i)
      EXPECT_EQ(testing::CompareImages(BatchImage(*a, i), BatchImage(*b, i)).max_abs, 0);
  }
}

TEST(LoaderTest, ReferencePathThroughTheLoader) {
  auto src = Source(8);
  LoaderOptions o = SmallTrainOptions(4);
  auto fast = Make(src, o);
  o.path = LoaderOptions::Path::kReference;
  auto ref = Make(src, o);
  ASSERT_TRUE(fast->StartEpoch(0).ok());
  ASSERT_TRUE(ref->StartEpoch(0).ok());
  std::shared_ptr<Batch> a, b;
  while (fast->Next(&a).ok() && a) {
    ASSERT_TRUE(ref->Next(&b).ok() && b);
    ASSERT_EQ(a->label_count(), b->label_count());
    for (size_t k = 0; k < a->labels.size(); ++k) EXPECT_NEAR(a->labels[k], b->labels[k], 0.5 / 128);
    for (int i = 0; i < a->size; ++i)
      EXPECT_LE(testing::CompareImages(BatchImage(*a, i), BatchImage(*b, i)).mean_abs, 1.0);
  }
}

TEST(LoaderTest, OddImagesAndEmptyLabels) {
  auto src = std::make_shared<FakeSource>();
  src->Add(FakeSource::MakeImage(10, 10, 1, 1, "ten"));
  src->Add(FakeSource::MakeImage(1, 1000, 1, 2, "wide"));
  src->Add(FakeSource::MakeImage(1000, 1, 1, 3, "tall"));
  src->Add(FakeSource::MakeImage(64, 128, 0, 4, "empty"));
  auto edges = FakeSource::MakeImage(96, 128, 0, 5, "edges");
  edges.boxes = {{1, 0.05f, 0.5f, 0.1f, 0.2f}, {2, 0.95f, 0.05f, 0.1f, 0.1f}, {3, 0.5f, 0.5f, 1.0f, 1.0f}};
  src->Add(edges);
  for (LoaderMode mode : {LoaderMode::kTrain, LoaderMode::kVal}) {
    LoaderOptions o = SmallTrainOptions(2);
    o.mode = mode;
    o.hyp.mosaic = 0.5;
    auto loader = Make(src, o);
    ASSERT_TRUE(loader);
    for (int epoch = 0; epoch < 3; ++epoch) {
      ASSERT_TRUE(loader->StartEpoch(epoch).ok());
      std::shared_ptr<Batch> b;
      size_t n = 0;
      Status st;
      while ((st = loader->Next(&b)).ok() && b) {
        n += b->size;
        for (float v : b->labels) EXPECT_TRUE(std::isfinite(v));
      }
      EXPECT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(n, 5u);
    }
  }
}

TEST(LoaderTest, ValRectBatchesLetterboxWithoutScaleup) {
  auto src = std::make_shared<FakeSource>();
  // Stored at long side 128; originals twice that (FakeSource::MakeImage).
  src->Add(FakeSource::MakeImage(96, 128, 2, 1, "a"));   // ar 0.75
  src->Add(FakeSource::MakeImage(128, 64, 1, 2, "b"));   // ar 2
  src->Add(FakeSource::MakeImage(64, 128, 1, 3, "c"));   // ar 0.5
  src->Add(FakeSource::MakeImage(128, 128, 1, 4, "d"));  // ar 1
  LoaderOptions o = SmallTrainOptions(2);
  o.mode = LoaderMode::kVal;
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->StartEpoch(0).ok());
  std::shared_ptr<Batch> b;
  ASSERT_TRUE(loader->Next(&b).ok() && b);
  // sorted: c (0.5), a (0.75) | d (1), b (2). Batch 0 shape: h = ceil(0.75*4 + 0.5)*32 = 128, w = 160.
  EXPECT_EQ(b->samples[0].record, 2u);
  EXPECT_EQ(b->samples[1].record, 0u);
  EXPECT_EQ(b->height, 128);
  EXPECT_EQ(b->width, 160);
  // Record c (64 x 128) sits centred: pads left 16, top 32, no resize.
  const SampleInfo& c = b->samples[0];
  EXPECT_EQ(c.resized_h, 64);
  EXPECT_EQ(c.resized_w, 128);
  EXPECT_FLOAT_EQ(c.pad_w, 16);
  EXPECT_FLOAT_EQ(c.pad_h, 32);
  EXPECT_FLOAT_EQ(c.ratio_h, 0.5f);  // stored / original
  EXPECT_EQ(c.orig_h, 128);
  const cv::Mat img = BatchImage(*b, 0);
  EXPECT_EQ(img.at<cv::Vec3b>(0, 0), cv::Vec3b(114, 114, 114));
  const auto& rec = src->record(2);
  EXPECT_EQ(img.at<cv::Vec3b>(32, 16)[0], rec.pixels[0]);
  // Its box, normalised by the batch shape: cx_px = cx * 128 + 16.
  const Box& box = rec.boxes[0];
  ASSERT_GE(b->label_count(), 1u);
  EXPECT_FLOAT_EQ(b->labels[0], 0);
  EXPECT_NEAR(b->labels[2], (box.cx * 128 + 16) / 160, 1e-5);
  EXPECT_NEAR(b->labels[3], (box.cy * 64 + 32) / 128, 1e-5);
  EXPECT_NEAR(b->labels[4], box.w * 128 / 160, 1e-5);
  ASSERT_TRUE(loader->Next(&b).ok() && b);
  EXPECT_EQ(b->height, 160);  // [1, 1] batch: ceil(4.5) * 32
  EXPECT_EQ(b->width, 160);
  ASSERT_TRUE(loader->Next(&b).ok());
  EXPECT_FALSE(b);

  o.rect = false;  // square imgsz
  auto square = Make(src, o);
  ASSERT_TRUE(square->StartEpoch(0).ok());
  ASSERT_TRUE(square->Next(&b).ok() && b);
  EXPECT_EQ(b->samples[0].record, 0u);
  EXPECT_EQ(b->height, 128);
  EXPECT_EQ(b->width, 128);
}

TEST(LoaderTest, WorkerErrorsNameTheRecord) {
  auto src = Source(12);
  src->FailAt(7, Status::Corruption("shard-000.bin: record 7: checksum mismatch"));
  LoaderOptions o = SmallTrainOptions(4);
  o.shuffle = false;
  o.hyp.mosaic = 0;  // only record 7 itself touches record 7
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->StartEpoch(0).ok());
  std::shared_ptr<Batch> b;
  EXPECT_TRUE(loader->Next(&b).ok() && b);
  const Status st = loader->Next(&b);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("record 7"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("shard-000.bin"), std::string::npos) << st.message();
  EXPECT_FALSE(b);
  EXPECT_FALSE(loader->Next(&b).ok());         // sticky
  EXPECT_TRUE(loader->StartEpoch(0, 2).ok());  // a new start clears it
  EXPECT_TRUE(loader->Next(&b).ok() && b);
}

TEST(LoaderTest, BadRecordsBecomeErrorsNotCrashes) {
  auto src = Source(4);
  src->record(2).pixels.clear();  // no pixels
  src->record(3).channels = 1;
  LoaderOptions o = SmallTrainOptions(1);
  o.shuffle = false;
  o.hyp.mosaic = 0;
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->StartEpoch(0, 2).ok());
  std::shared_ptr<Batch> b;
  Status st = loader->Next(&b);
  EXPECT_EQ(st.code(), Status::Code::kDataError) << st.ToString();
  EXPECT_NE(st.message().find("record 2 (images/img2.jpg)"), std::string::npos) << st.message();
  ASSERT_TRUE(loader->StartEpoch(0, 3).ok());
  st = loader->Next(&b);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("record 3"), std::string::npos) << st.message();
}

TEST(LoaderTest, CreateRejectsBadOptionsAndEmptySources) {
  auto src = Source(4);
  LoaderOptions o = SmallTrainOptions();
  o.batch = 0;
  EXPECT_EQ(Loader::Create(src, o).status().code(), Status::Code::kInvalidArgument);
  o = SmallTrainOptions();
  o.hyp.fliplr = 1.5;
  EXPECT_NE(Loader::Create(src, o).status().message().find("fliplr"), std::string::npos);
  o = SmallTrainOptions();
  o.rank = 2, o.world_size = 2;
  EXPECT_FALSE(Loader::Create(src, o).ok());
  o = SmallTrainOptions();
  o.imgsz = 100;  // not a multiple of stride 32
  EXPECT_FALSE(Loader::Create(src, o).ok());
  EXPECT_FALSE(Loader::Create(std::make_shared<FakeSource>(), SmallTrainOptions()).ok());
  EXPECT_FALSE(Loader::Create(nullptr, SmallTrainOptions()).ok());
  auto loader = Make(src, SmallTrainOptions());
  std::shared_ptr<Batch> b;
  EXPECT_FALSE(loader->Next(&b).ok());  // before StartEpoch
}

// Counts allocations to check the pool reuses batch memory.
struct CountingAllocator : BufferAllocator {
  std::atomic<int> live{0}, total{0};
  void* Allocate(size_t bytes) override {
    ++live, ++total;
    return ::operator new(bytes);
  }
  void Free(void* p, size_t) override {
    --live;
    ::operator delete(p);
  }
};

TEST(LoaderTest, BatchMemoryComesFromTheAllocatorAndIsRecycled) {
  auto src = Source(40);
  auto alloc = std::make_shared<CountingAllocator>();
  LoaderOptions o = SmallTrainOptions(2);
  o.prefetch = 3;
  o.allocator = alloc;
  {
    auto loader = Make(src, o);
    for (int epoch = 0; epoch < 3; ++epoch) EpochHashes(loader.get(), epoch);
    EXPECT_LE(alloc->total.load(), 5);  // prefetch + the consumer's one, not one per batch
    // A batch may outlive the loader.
    ASSERT_TRUE(loader->StartEpoch(0).ok());
    std::shared_ptr<Batch> kept;
    ASSERT_TRUE(loader->Next(&kept).ok() && kept);
    const uint64_t h = HashBatch(*kept);
    loader.reset();
    EXPECT_EQ(HashBatch(*kept), h);
    EXPECT_GT(alloc->live.load(), 0);
  }
  EXPECT_EQ(alloc->live.load(), 0);
}

TEST(LoaderTest, HoldingManyBatchesGrowsThePoolInsteadOfBlocking) {
  auto src = Source(12);
  LoaderOptions o = SmallTrainOptions(1);
  o.prefetch = 1;
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->StartEpoch(0).ok());
  std::vector<std::shared_ptr<Batch>> held;
  std::shared_ptr<Batch> b;
  while (loader->Next(&b).ok() && b) held.push_back(b);
  EXPECT_EQ(held.size(), 12u);
  std::set<const uint8_t*> distinct;
  for (auto& h : held) distinct.insert(h->images);
  EXPECT_EQ(distinct.size(), 12u);
}

TEST(LoaderTest, DestroyingMidEpochCancelsCleanly) {
  auto src = Source(64, 256);
  LoaderOptions o = SmallTrainOptions(8, 256);
  o.prefetch = 4;
  for (int i = 0; i < 3; ++i) {
    auto loader = Make(src, o);
    ASSERT_TRUE(loader->StartEpoch(0).ok());
    std::shared_ptr<Batch> b;
    if (i > 0) {
      ASSERT_TRUE(loader->Next(&b).ok() && b);
    }
    // destructor runs with work in flight
  }
}

}  // namespace
}  // namespace yc
