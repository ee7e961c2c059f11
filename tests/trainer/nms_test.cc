#include "trainer/eval/nms.h"

#include <gtest/gtest.h>

#include <string>

#include "trainer/model/box_ops.h"

namespace yc::trainer {
namespace {

// (1, 4 + nc, A) prediction from per-anchor xywh boxes and class scores.
at::Tensor Pred(const std::vector<std::vector<float>>& boxes, const std::vector<std::vector<float>>& scores) {
  const int64_t a = static_cast<int64_t>(boxes.size()), nc = static_cast<int64_t>(scores[0].size());
  auto p = at::zeros({1, 4 + nc, a});
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t k = 0; k < 4; ++k) p[0][k][i] = boxes[i][k];
    for (int64_t c = 0; c < nc; ++c) p[0][4 + c][i] = scores[i][c];
  }
  return p;
}

TEST(Nms, SuppressesOverlapsWithinAClassOnly) {
  // Boxes 0 and 1 overlap (IoU 0.82); box 2 is elsewhere. Class scores decide what is suppressed.
  auto pred = Pred({{50, 50, 20, 20}, {51, 51, 20, 20}, {150, 150, 10, 10}},
                   {{0.9f, 0.0f}, {0.8f, 0.0f}, {0.0f, 0.7f}});
  NmsOptions opt;
  opt.conf = 0.25;
  auto out = NonMaxSuppression(pred, opt);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(0), 2);
  EXPECT_TRUE(at::allclose(out[0][0], at::tensor(std::vector<float>{40, 40, 60, 60, 0.9f, 0})));
  EXPECT_TRUE(at::allclose(out[0][1], at::tensor(std::vector<float>{145, 145, 155, 155, 0.7f, 1})));
  // Same geometry, different classes: nothing is suppressed (class-offset trick).
  auto pred2 = Pred({{50, 50, 20, 20}, {51, 51, 20, 20}}, {{0.9f, 0.0f}, {0.0f, 0.8f}});
  EXPECT_EQ(NonMaxSuppression(pred2, opt)[0].size(0), 2);
  // Class-agnostic: the lower one goes.
  opt.agnostic = true;
  EXPECT_EQ(NonMaxSuppression(pred2, opt)[0].size(0), 1);
}

TEST(Nms, ClassesFilterTheBestClassOfEachBoxBeforeSuppression) {
  // Box 0 is best as class 1 (0.9) and also scores 0.8 as class 0; box 1 is class 0, overlapping box 0.
  auto pred = Pred({{50, 50, 20, 20}, {51, 51, 20, 20}, {150, 150, 10, 10}},
                   {{0.8f, 0.9f, 0.0f}, {0.0f, 0.0f, 0.7f}, {0.6f, 0.0f, 0.0f}});
  NmsOptions opt;
  opt.conf = 0.25;
  opt.multi_label = false;
  opt.classes = {0};
  // Box 0's best class is 1, so it is dropped, not read as class 0 (Ultralytics filters after the max).
  auto out = NonMaxSuppression(pred, opt)[0];
  ASSERT_EQ(out.size(0), 1);
  EXPECT_EQ(out[0][5].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(out[0][4].item<float>(), 0.6f);
  opt.classes = {1, 2};
  out = NonMaxSuppression(pred, opt)[0];
  ASSERT_EQ(out.size(0), 2);  // different classes: no suppression between boxes 0 and 1
  opt.agnostic = true;        // agnostic: box 1 goes under box 0
  out = NonMaxSuppression(pred, opt)[0];
  ASSERT_EQ(out.size(0), 1);
  EXPECT_EQ(out[0][5].item<float>(), 1.0f);
  // Multi-label val: box 0 as class 0 is a candidate of its own.
  NmsOptions val;
  val.classes = {0};
  out = NonMaxSuppression(pred, val)[0];
  ASSERT_EQ(out.size(0), 2);
  EXPECT_FLOAT_EQ(out[0][4].item<float>(), 0.8f);
  // The batched path keeps the same rows.
  for (const NmsOptions& o : {opt, val}) {
    auto batched = NonMaxSuppressionBatched(at::cat({pred, pred}), o)[1];
    auto single = NonMaxSuppression(pred, o)[0];
    ASSERT_TRUE(batched.sizes() == single.sizes());
    EXPECT_TRUE(at::equal(batched, single));
  }
  EXPECT_TRUE(at::equal(ClassFilterMask(at::tensor(std::vector<float>{0, 3, 2}), {2, 0}),
                        at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool)));
  EXPECT_TRUE(ClassFilterMask(at::tensor(std::vector<float>{0, 3}), {}).all().item<bool>());
}

TEST(Nms, MultiLabelKeepsEveryClassAboveConf) {
  auto pred = Pred({{50, 50, 20, 20}}, {{0.6f, 0.3f, 0.0005f}});
  auto out = NonMaxSuppression(pred)[0];  // conf 0.001
  ASSERT_EQ(out.size(0), 2);
  EXPECT_FLOAT_EQ(out[0][4].item<float>(), 0.6f);
  EXPECT_EQ(out[1][5].item<float>(), 1.0f);
  NmsOptions single;
  single.multi_label = false;
  auto best = NonMaxSuppression(pred, single)[0];
  ASSERT_EQ(best.size(0), 1);
  EXPECT_EQ(best[0][5].item<float>(), 0.0f);
}

TEST(Nms, IouThresholdIsStrict) {
  // Two boxes with IoU exactly 0.5 survive iou = 0.5 (suppression needs IoU > threshold).
  auto pred = Pred({{10, 10, 20, 20}, {10, 15, 20, 10}}, {{0.9f}, {0.8f}});
  NmsOptions opt;
  opt.iou = 0.5;
  EXPECT_EQ(NonMaxSuppression(pred, opt)[0].size(0), 2);
  opt.iou = 0.49;
  EXPECT_EQ(NonMaxSuppression(pred, opt)[0].size(0), 1);
}

TEST(Nms, EmptyAndLimits) {
  auto pred = Pred({{10, 10, 4, 4}, {30, 30, 4, 4}, {50, 50, 4, 4}}, {{0.0001f}, {0.5f}, {0.4f}});
  NmsOptions opt;
  opt.conf = 0.9;
  auto none = NonMaxSuppression(pred, opt);
  ASSERT_EQ(none[0].sizes(), (at::IntArrayRef{0, 6}));
  opt.conf = 0.001;
  opt.max_det = 1;
  auto one = NonMaxSuppression(pred, opt)[0];
  ASSERT_EQ(one.size(0), 1);
  EXPECT_FLOAT_EQ(one[0][4].item<float>(), 0.5f);
  opt.max_det = 300;
  opt.max_nms = 1;  // only the best candidate enters NMS
  EXPECT_EQ(NonMaxSuppression(pred, opt)[0].size(0), 1);
  EXPECT_TRUE(NonMaxSuppression(at::zeros({2, 3})).empty());  // malformed input: no crash, no output
  auto batch = NonMaxSuppression(at::cat({pred, at::zeros_like(pred)}, 0));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[1].size(0), 0);
}

// An nms=True export's output (B, max_det, 6) is taken as its detections, as Ultralytics'
// non_max_suppression does for an end2end model: rows above conf (the zero padding never), the first
// max_det, then the class filter; no suppression, whatever the overlaps.
TEST(Nms, EndToEndRowsAreTheDetections) {
  at::Tensor rows = at::zeros({2, 4, 6});
  rows[0][0] = at::tensor(std::vector<float>{10, 10, 50, 50, 0.9f, 2});
  rows[0][1] = at::tensor(std::vector<float>{11, 11, 51, 51, 0.6f, 2});  // overlaps row 0: kept all the same
  rows[0][2] = at::tensor(std::vector<float>{80, 80, 90, 90, 0.3f, 0});
  NmsOptions opt;
  opt.end2end = true;
  opt.conf = 0.25;
  auto out = NonMaxSuppression(rows, opt);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].size(0), 3);
  EXPECT_TRUE(at::equal(out[0], rows[0].narrow(0, 0, 3)));
  EXPECT_EQ(out[1].sizes(), (at::IntArrayRef{0, 6}));  // all padding
  opt.conf = 0.5;
  EXPECT_EQ(NonMaxSuppression(rows, opt)[0].size(0), 2);
  opt.max_det = 1;
  EXPECT_EQ(NonMaxSuppression(rows, opt)[0].size(0), 1);
  opt.max_det = 300;
  opt.conf = 0.25;
  opt.classes = {0};
  out = NonMaxSuppression(rows, opt);
  ASSERT_EQ(out[0].size(0), 1);
  EXPECT_EQ(out[0][0][4].item<float>(), 0.3f);
  // Read as raw predictions instead, the same tensor would be 2 anchors of 2 classes: end2end decides.
  EXPECT_TRUE(NonMaxSuppression(at::zeros({1, 6, 5}), opt).empty());
}

// Random predictions (B, 4 + nc, A): clustered boxes so suppression matters, scores spread around conf.
at::Tensor ClutteredPrediction(int64_t bs, int64_t nc, int64_t anchors, uint64_t seed) {
  at::manual_seed(seed);
  auto centres = at::rand({bs, 2, 6}) * 300 + 20;  // 6 "objects" per image
  auto which = at::randint(0, 6, {bs, 1, anchors}, at::kLong).expand({bs, 2, anchors});
  auto xy = centres.gather(2, which) + at::randn({bs, 2, anchors}) * 8;
  auto wh = at::rand({bs, 2, anchors}) * 40 + 10;
  auto scores = at::rand({bs, nc, anchors}).pow(6);  // most small, a few large
  scores.select(2, 0).fill_(0.5);  // equal scores: ties keep anchor order
  scores.select(2, 1).fill_(0.5);
  return at::cat({xy, wh, scores}, 1);
}

void ExpectSameDetections(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].sizes(), b[i].sizes()) << what << ", image " << i;
    EXPECT_TRUE(at::equal(a[i], b[i])) << what << ", image " << i;
  }
}

TEST(Nms, BatchedEqualsPerImage) {
  auto pred = ClutteredPrediction(5, 3, 700, 11);
  pred.narrow(0, 2, 1).narrow(1, 4, 3).zero_();  // one image without candidates
  int64_t kept_total = 0;
  for (bool multi : {true, false}) {
    for (bool agnostic : {false, true}) {
      for (int64_t max_det : {300, 7}) {
        NmsOptions o;
        o.conf = 0.01;
        o.multi_label = multi;
        o.agnostic = agnostic;
        o.max_det = max_det;
        const auto reference = NonMaxSuppression(pred, o);  // CPU: the per-image path
        ASSERT_EQ(reference[2].size(0), 0);
        for (const auto& r : reference) kept_total += r.size(0);
        // Chunks far smaller than the candidates force many rounds; 9 is rounded up to 16.
        for (int64_t chunk : {9, 64, 512}) {
          ExpectSameDetections(NonMaxSuppressionBatched(pred, o, chunk), reference,
                               "multi " + std::to_string(multi) + " agnostic " + std::to_string(agnostic) +
                                   " max_det " + std::to_string(max_det) + " chunk " + std::to_string(chunk));
        }
      }
    }
  }
  EXPECT_GT(kept_total, 100);  // the comparison saw real suppression work
  NmsOptions capped;
  capped.max_nms = 50;
  ExpectSameDetections(NonMaxSuppressionBatched(pred, capped, 16), NonMaxSuppression(pred, capped), "max_nms 50");
  NmsOptions none;
  none.conf = 1.0;  // scores are below 1
  auto empty = NonMaxSuppressionBatched(pred, none);
  ASSERT_EQ(empty.size(), 5u);
  for (const auto& e : empty) EXPECT_EQ(e.sizes(), (at::IntArrayRef{0, 6}));
  EXPECT_TRUE(NonMaxSuppressionBatched(at::zeros({2, 3})).empty());
}

TEST(Nms, LoopAndBitmaskBackEndsAgree) {
  at::manual_seed(3);
  // Dense clutter: many overlapping boxes, n not a multiple of 64, several row blocks.
  const int64_t n = 517;
  auto xy = at::rand({n, 2}) * 200;
  auto wh = at::rand({n, 2}) * 60 + 5;
  auto boxes = XywhToXyxy(at::cat({xy, wh}, 1));
  auto scores = at::rand({n});
  auto order = std::get<1>(scores.sort(true, 0, true));
  auto sorted = boxes.index_select(0, order);
  for (double thr : {0.3, 0.5, 0.7}) {
    auto a = NmsSortedLoop(sorted, thr, -1);
    auto b = NmsSortedBitmask(sorted, thr, -1, /*block_rows=*/100);
    ASSERT_TRUE(at::equal(a, b)) << "thr " << thr;
    EXPECT_GT(a.size(0), 10);
    EXPECT_LT(a.size(0), n);
    auto limited = NmsSortedBitmask(sorted, thr, 7, 3);
    EXPECT_TRUE(at::equal(limited, a.narrow(0, 0, 7)));
  }
  // Kept boxes never overlap above the threshold; every dropped box overlaps a kept higher-scored one.
  auto keep = Nms(boxes, scores, 0.5);
  auto kb = boxes.index_select(0, keep);
  auto iou = BoxIoUMatrix(kb, kb) - at::eye(keep.size(0));
  EXPECT_LE(iou.max().item<float>(), 0.5f);
}

}  // namespace
}  // namespace yc::trainer
