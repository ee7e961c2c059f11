// Epoch order, rank slicing and rect batches (`ultralytics/data/base.py` BaseDataset.set_rectangle).
#include "loader/order/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "loader/order/rect_batches.h"

namespace yc {
namespace {

TEST(RectBatchesTest, ShapesFollowUltralytics) {
  // (w, h): aspect ratios 0.75, 0.5, 1.0, 1.5, 2.0, 0.75
  const std::vector<cv::Size> sizes = {{640, 480}, {640, 320}, {500, 500}, {400, 600}, {320, 640}, {800, 600}};
  const RectBatches r = ComputeRectBatches(sizes, 2, 640, 32, 0.5);
  // sorted by h/w, ties stable: 1 (0.5), 0 (0.75), 5 (0.75), 2 (1.0), 3 (1.5), 4 (2.0)
  EXPECT_EQ(r.order, (std::vector<size_t>{1, 0, 5, 2, 3, 4}));
  ASSERT_EQ(r.shapes.size(), 3u);
  // batch 0: ratios 0.5, 0.75 (< 1): h = ceil(0.75*20 + 0.5)*32 = 512, w = ceil(20.5)*32 = 672
  EXPECT_EQ(r.shapes[0], cv::Size(672, 512));
  // batch 1: 0.75 and 1.0 -> mixed: [1, 1] -> 672 x 672
  EXPECT_EQ(r.shapes[1], cv::Size(672, 672));
  // batch 2: 1.5, 2.0 (> 1): w = ceil(20/1.5 + 0.5)*32 = ceil(13.83)*32 = 448, h = 672
  EXPECT_EQ(r.shapes[2], cv::Size(448, 672));
}

TEST(RectBatchesTest, ZeroPadGivesStrideMultiples) {
  const RectBatches r = ComputeRectBatches({{640, 480}}, 1, 640, 32, 0.0);
  EXPECT_EQ(r.shapes[0], cv::Size(640, 480));
}

LoaderOptions TrainOptions(int batch, int rank, int world) {
  LoaderOptions o;
  o.batch = batch, o.rank = rank, o.world_size = world;
  return o;
}

TEST(SamplerTest, PermutationIsDeterministicPerEpoch) {
  EpochSampler a(100, TrainOptions(10, 0, 1), {}), b(100, TrainOptions(10, 0, 1), {});
  a.SetEpoch(3);
  b.SetEpoch(3);
  std::vector<SampleSlot> sa, sb;
  cv::Size shape;
  std::set<uint64_t> seen;
  for (size_t i = 0; i < a.batches_per_epoch(); ++i) {
    a.Batch(i, &sa, &shape);
    b.Batch(i, &sb, &shape);
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t k = 0; k < sa.size(); ++k) {
      EXPECT_EQ(sa[k].record, sb[k].record);
      EXPECT_EQ(sa[k].position, i * 10 + k);
      seen.insert(sa[k].record);
    }
  }
  EXPECT_EQ(seen.size(), 100u);  // a permutation
  b.SetEpoch(4);
  b.Batch(0, &sb, &shape);
  a.Batch(0, &sa, &shape);
  int same = 0;
  for (size_t k = 0; k < sa.size(); ++k) same += sa[k].record == sb[k].record;
  EXPECT_LT(same, 5);
}

TEST(SamplerTest, NoShuffleIsIdentity) {
  LoaderOptions o = TrainOptions(4, 0, 1);
  o.shuffle = false;
  EpochSampler s(10, o, {});
  s.SetEpoch(7);
  std::vector<SampleSlot> b;
  cv::Size shape;
  s.Batch(2, &b, &shape);
  ASSERT_EQ(b.size(), 2u);  // 10 = 4 + 4 + 2
  EXPECT_EQ(b[0].record, 8u);
  EXPECT_EQ(b[1].record, 9u);
  EXPECT_EQ(shape, cv::Size(640, 640));
}

TEST(SamplerTest, RankSlicesAreDisjointEqualAndCovering) {
  const size_t n = 103;
  const int world = 4;
  std::vector<std::vector<uint64_t>> positions(world);
  std::multiset<uint64_t> records;
  size_t batches = 0;
  for (int r = 0; r < world; ++r) {
    EpochSampler s(n, TrainOptions(8, r, world), {});
    s.SetEpoch(1);
    if (r == 0) batches = s.batches_per_epoch();
    EXPECT_EQ(s.batches_per_epoch(), batches);
    std::vector<SampleSlot> b;
    cv::Size shape;
    for (size_t i = 0; i < s.batches_per_epoch(); ++i) {
      s.Batch(i, &b, &shape);
      for (const SampleSlot& x : b) {
        positions[r].push_back(x.position);
        records.insert(x.record);
      }
    }
  }
  std::set<uint64_t> all;
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(positions[r].size(), 26u);  // ceil(103 / 4)
    for (uint64_t p : positions[r]) {
      EXPECT_EQ(p % world, static_cast<uint64_t>(r));
      EXPECT_TRUE(all.insert(p).second) << "position " << p << " on two ranks";
    }
  }
  EXPECT_EQ(all.size(), 104u);  // padded to a multiple of 4
  for (uint64_t i = 0; i < n; ++i) EXPECT_GE(records.count(i), 1u);
  EXPECT_EQ(records.size(), 104u);  // one record repeated, like DistributedSampler's padding
}

TEST(SamplerTest, DropLastDropsTheShortBatch) {
  LoaderOptions o = TrainOptions(4, 0, 1);
  o.drop_last = true;
  EXPECT_EQ(EpochSampler(10, o, {}).batches_per_epoch(), 2u);
  o.drop_last = false;
  EXPECT_EQ(EpochSampler(10, o, {}).batches_per_epoch(), 3u);
}

TEST(SamplerTest, ValRanksTakeContiguousBatches) {
  LoaderOptions o;
  o.mode = LoaderMode::kVal;
  o.batch = 2;
  o.rect = false;
  o.world_size = 2;
  std::vector<size_t> got;
  for (int r = 0; r < 2; ++r) {
    o.rank = r;
    EpochSampler s(9, o, {});  // 5 batches: rank 0 gets 3, rank 1 gets 2
    EXPECT_EQ(s.batches_per_epoch(), r == 0 ? 3u : 2u);
    std::vector<SampleSlot> b;
    cv::Size shape;
    for (size_t i = 0; i < s.batches_per_epoch(); ++i) {
      s.Batch(i, &b, &shape);
      for (const auto& x : b) got.push_back(x.record);
    }
  }
  EXPECT_EQ(got, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

// Each distinct (count, shape) of the batches Batch() hands out, in order of first appearance.
std::vector<BatchShape> ShapesOfEveryBatch(const EpochSampler& s) {
  std::vector<BatchShape> shapes;
  std::vector<SampleSlot> b;
  cv::Size size;
  for (size_t i = 0; i < s.batches_per_epoch(); ++i) {
    s.Batch(i, &b, &size);
    const BatchShape shape{static_cast<int>(b.size()), size.height, size.width};
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
  }
  return shapes;
}

TEST(SamplerTest, DistinctShapesAreTheShapesOfTheBatches) {
  LoaderOptions o = TrainOptions(4, 0, 1);
  EpochSampler train(10, o, {});
  EXPECT_EQ(train.DistinctShapes(), (std::vector<BatchShape>{{4, o.imgsz, o.imgsz}, {2, o.imgsz, o.imgsz}}));
  EXPECT_EQ(train.DistinctShapes(), ShapesOfEveryBatch(train));
  EXPECT_EQ(EpochSampler(12, o, {}).DistinctShapes(), (std::vector<BatchShape>{{4, o.imgsz, o.imgsz}}));
  for (int rank = 0; rank < 3; ++rank) {  // 103 over 3 ranks: 35 each (padded), batches of 4 and a last of 3
    EpochSampler s(103, TrainOptions(4, rank, 3), {});
    EXPECT_EQ(s.DistinctShapes(), ShapesOfEveryBatch(s));
    EXPECT_EQ(s.DistinctShapes().back().size, 3);
  }
  LoaderOptions windowed = TrainOptions(4, 1, 2);
  windowed.order = SampleOrder::kWindowed;
  EpochSampler w(21, windowed, {});
  EXPECT_EQ(w.DistinctShapes(), ShapesOfEveryBatch(w));
  std::vector<cv::Size> sizes;
  for (int i = 0; i < 23; ++i) sizes.emplace_back(640, 200 + 20 * i);
  LoaderOptions val;
  val.mode = LoaderMode::kVal;
  val.batch = 4;
  val.rect = true;
  EpochSampler rect(23, val, sizes);
  EXPECT_GT(rect.DistinctShapes().size(), 2u);
  EXPECT_EQ(rect.DistinctShapes(), ShapesOfEveryBatch(rect));
  LoaderOptions train_rect = TrainOptions(4, 1, 2);
  train_rect.train_rect = true;
  EpochSampler tr(23, train_rect, sizes);
  EXPECT_EQ(tr.DistinctShapes(), ShapesOfEveryBatch(tr));
}

}  // namespace
}  // namespace yc
