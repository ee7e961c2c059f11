// Ultralytics' rect=True train batches (`ultralytics/data/base.py` set_rectangle, pad 0 for train;
// YOLODataset.build_transforms turns mosaic, mixup and cutmix off), CutMix and CopyPaste through the
// public Loader: shapes, order, ranks, determinism at any thread count.
#include <gtest/gtest.h>

#include <set>

#include "loader/loader.h"
#include "loader/order/rect_batches.h"
#include "loader/order/sampler.h"
#include "tests/loader/fake_source.h"
#include "tests/loader/test_util.h"

namespace yc {
namespace {

using testing::BatchImage;
using testing::FakeSource;
using testing::SmallTrainOptions;
using testing::HashBatch;


LoaderOptions Rect(int batch, int rank = 0, int world = 1) {
  LoaderOptions o = SmallTrainOptions(batch);
  o.train_rect = true;
  o.rank = rank;
  o.world_size = world;
  return o;
}

std::vector<std::shared_ptr<Batch>> Epoch(std::shared_ptr<const RecordSource> src, const LoaderOptions& o, int epoch) {
  auto loader = Loader::Create(std::move(src), o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<std::shared_ptr<Batch>> out;
  if (!loader.ok()) return out;
  EXPECT_TRUE((*loader)->StartEpoch(epoch).ok());
  for (std::shared_ptr<Batch> b; (*loader)->Next(&b).ok() && b;) out.push_back(b);
  return out;
}

std::vector<uint64_t> Hashes(const std::vector<std::shared_ptr<Batch>>& batches) {
  std::vector<uint64_t> h;
  for (const auto& b : batches) h.push_back(HashBatch(*b));
  return h;
}

// (width, height) of 10 images of mixed aspect ratios.
std::vector<cv::Size> MixedSizes() {
  return {{640, 480}, {320, 640}, {500, 500}, {640, 360}, {400, 600},
          {600, 400}, {480, 640}, {640, 640}, {700, 350}, {300, 600}};
}

TEST(TrainRectTest, SamplerBatchesAreUltralyticsRectBatchesInOrderEveryEpoch) {
  const std::vector<cv::Size> sizes = MixedSizes();
  EpochSampler s(sizes.size(), Rect(3), sizes);
  const RectBatches expected = ComputeRectBatches(sizes, 3, 128, 32, 0.0);  // train pad 0
  ASSERT_EQ(s.batches_per_epoch(), 4u);
  std::vector<SampleSlot> slots;
  cv::Size shape;
  std::vector<size_t> order;
  for (int epoch : {0, 5}) {
    s.SetEpoch(epoch);  // no shuffle: the same batches every epoch
    order.clear();
    for (size_t b = 0; b < s.batches_per_epoch(); ++b) {
      s.Batch(b, &slots, &shape);
      EXPECT_EQ(shape, expected.shapes[b]) << "batch " << b;
      EXPECT_EQ(slots.size(), b < 3 ? 3u : 1u);
      for (const SampleSlot& slot : slots) order.push_back(slot.record);
    }
    EXPECT_EQ(order, expected.order) << "epoch " << epoch;
  }
  // Some batch is not square (else the test proves nothing), and every shape is a stride multiple <= imgsz.
  bool non_square = false;
  for (const cv::Size& sh : expected.shapes) {
    non_square |= sh.width != sh.height;
    EXPECT_EQ(sh.width % 32, 0);
    EXPECT_LE(std::max(sh.width, sh.height), 128);
  }
  EXPECT_TRUE(non_square);
  EXPECT_EQ(s.max_shape(), cv::Size(128, 128));
}

TEST(TrainRectTest, RanksTakeWholeBatchesOfOneShapeAndTheSameCount) {
  const std::vector<cv::Size> sizes = MixedSizes();
  const RectBatches global = ComputeRectBatches(sizes, 2, 128, 32, 0.0);  // 5 batches, padded to 6 for 2 ranks
  std::multiset<uint64_t> seen;
  std::set<uint64_t> positions;
  for (int rank : {0, 1}) {
    EpochSampler s(sizes.size(), Rect(2, rank, 2), sizes);
    s.SetEpoch(0);
    ASSERT_EQ(s.batches_per_epoch(), 3u) << "rank " << rank;
    std::vector<SampleSlot> slots;
    cv::Size shape;
    for (size_t b = 0; b < 3; ++b) {
      s.Batch(b, &slots, &shape);
      const size_t g = (b * 2 + rank) % global.shapes.size();  // rank r: global batches r, r + 2, ...
      EXPECT_EQ(shape, global.shapes[g]) << "rank " << rank << " batch " << b;
      ASSERT_EQ(slots.size(), 2u);
      for (size_t k = 0; k < slots.size(); ++k) {
        EXPECT_EQ(slots[k].record, global.order[g * 2 + k]);
        seen.insert(slots[k].record);
        EXPECT_TRUE(positions.insert(slots[k].position).second) << "a position keys one sample";
      }
    }
  }
  EXPECT_EQ(seen.size(), 12u);  // 10 records and the first batch again (padding)
  for (uint64_t r = 0; r < 10; ++r) EXPECT_GE(seen.count(r), 1u) << r;

  LoaderOptions drop = Rect(3);
  drop.drop_last = true;
  EXPECT_EQ(EpochSampler(sizes.size(), drop, sizes).batches_per_epoch(), 3u);  // 10 = 3 x 3 + 1 dropped
}

// Through the loader: each image letterboxed (scale up, centred) into its batch's shape, no mosaic
// even at mosaic=1, labels normalised by the batch shape.
TEST(TrainRectTest, LoaderLetterboxesIntoEachBatchShapeWithoutMosaic) {
  auto src = std::make_shared<FakeSource>();
  src->Add(FakeSource::MakeImage(96, 128, 2, 1, "a"));   // ar 0.75
  src->Add(FakeSource::MakeImage(128, 64, 1, 2, "b"));   // ar 2
  src->Add(FakeSource::MakeImage(64, 128, 1, 3, "c"));   // ar 0.5
  src->Add(FakeSource::MakeImage(128, 128, 1, 4, "d"));  // ar 1
  LoaderOptions o = Rect(2);
  o.hyp.mosaic = 1.0, o.hyp.mixup = 1.0, o.hyp.cutmix = 1.0;
  o.hyp.translate = 0, o.hyp.scale = 0, o.hyp.fliplr = 0, o.hyp.hsv_h = o.hyp.hsv_s = o.hyp.hsv_v = 0;
  const auto batches = Epoch(src, o, 0);
  ASSERT_EQ(batches.size(), 2u);
  const Batch& b0 = *batches[0];
  // sorted: c (0.5), a (0.75) | d (1), b (2); batch 0: h = ceil(0.75 * 128 / 32) * 32 = 96, w = 128.
  EXPECT_EQ(b0.samples[0].record, 2u);
  EXPECT_EQ(b0.samples[1].record, 0u);
  EXPECT_EQ(b0.height, 96);
  EXPECT_EQ(b0.width, 128);
  EXPECT_EQ(batches[1]->height, 128);
  EXPECT_EQ(batches[1]->width, 128);
  // c (64 x 128) in 96 x 128: r = 1, 16 rows of padding above; its pixels unchanged (no mosaic, no warp).
  const cv::Mat img = BatchImage(b0, 0);
  EXPECT_EQ(img.at<cv::Vec3b>(0, 0), cv::Vec3b(114, 114, 114));
  const auto& rec = src->record(2);
  EXPECT_EQ(img.at<cv::Vec3b>(16, 0)[0], rec.pixels[0]);
  EXPECT_EQ(img.at<cv::Vec3b>(79, 127)[2], rec.pixels[(63 * 128 + 127) * 3 + 2]);
  // Its one box (no mixup or cutmix boxes added), normalised by the batch shape.
  size_t c_rows = 0;
  for (size_t r = 0; r < b0.label_count(); ++r) {
    const float* row = &b0.labels[r * 6];
    if (row[0] != 0) continue;
    ++c_rows;
    EXPECT_NEAR(row[3], (rec.boxes[0].cy * 64 + 16) / 96, 1e-5);
    EXPECT_NEAR(row[5], rec.boxes[0].h * 64 / 96, 1e-5);
  }
  EXPECT_EQ(c_rows, 1u);
}

TEST(TrainRectTest, DeterministicAtAnyThreadCountAndRefusedWithTheWindowedOrder) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(13, 128, 2));
  std::vector<uint64_t> reference;
  for (int threads : {1, 3}) {
    LoaderOptions o = Rect(4);
    o.threads = threads;
    const auto batches = Epoch(src, o, 1);
    ASSERT_EQ(batches.size(), 4u);
    if (reference.empty()) reference = Hashes(batches);
    else EXPECT_EQ(Hashes(batches), reference) << threads << " threads";
  }
  LoaderOptions o = Rect(4);
  o.order = SampleOrder::kWindowed;
  const auto refused = Loader::Create(src, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("train_rect"), std::string::npos) << refused.status().ToString();
}

// CutMix adds partner boxes to some samples and changes nothing else (its draws have their own stream):
// every batch keeps at least the labels it had without it; the labels stay inside the image.
TEST(CutMixLoaderTest, AddsClippedPartnerBoxesDeterministically) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(16, 128, 3));
  LoaderOptions plain = SmallTrainOptions(4);
  plain.hyp.mosaic = 0;  // letterboxed samples leave free areas more often than mosaics
  const auto without = Epoch(src, plain, 0);
  LoaderOptions o = plain;
  o.hyp.cutmix = 1.0;
  std::vector<uint64_t> reference;
  size_t added = 0;
  for (int threads : {1, 4}) {
    o.threads = threads;
    const auto with = Epoch(src, o, 0);
    ASSERT_EQ(with.size(), without.size());
    if (reference.empty()) reference = Hashes(with);
    else EXPECT_EQ(Hashes(with), reference) << threads << " threads";
    added = 0;
    for (size_t i = 0; i < with.size(); ++i) {
      EXPECT_GE(with[i]->label_count(), without[i]->label_count());
      added += with[i]->label_count() - without[i]->label_count();
      for (size_t r = 0; r < with[i]->label_count(); ++r) {
        const float* row = &with[i]->labels[r * 6];
        EXPECT_GE(row[2] - row[4] / 2, -1e-5f);
        EXPECT_LE(row[2] + row[4] / 2, 1 + 1e-5f);
        EXPECT_GE(row[3] - row[5] / 2, -1e-5f);
        EXPECT_LE(row[3] + row[5] / 2, 1 + 1e-5f);
        EXPECT_GT(row[4], 0);
        EXPECT_GT(row[5], 0);
      }
    }
  }
  EXPECT_GT(added, 0u);
  EXPECT_NE(reference, Hashes(without));
  o.hyp.cutmix = 1.5;
  const auto refused = Loader::Create(src, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cutmix must be a probability in [0, 1], got 1.5"), std::string::npos)
      << refused.status().ToString();
}

// Ultralytics' CopyPaste returns a sample without instance segments unchanged (both modes); box labels
// have none, so the batches are those of copy_paste = 0.
TEST(CopyPasteLoaderTest, IsANoOpOnBoxLabelsAsInUltralytics) {
  auto src = std::make_shared<FakeSource>(FakeSource::Synthetic(8, 128, 4));
  const auto reference = Hashes(Epoch(src, SmallTrainOptions(4), 0));
  for (CopyPasteMode mode : {CopyPasteMode::kFlip, CopyPasteMode::kMixup}) {
    LoaderOptions o = SmallTrainOptions(4);
    o.hyp.copy_paste = 1.0;
    o.hyp.copy_paste_mode = mode;
    EXPECT_EQ(Hashes(Epoch(src, o, 0)), reference);
  }
  LoaderOptions o = SmallTrainOptions(4);
  o.hyp.copy_paste = -0.1;
  EXPECT_FALSE(Loader::Create(src, o).ok());
}

}  // namespace
}  // namespace yc
