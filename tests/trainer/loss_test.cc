#include "trainer/loss/loss.h"

#include <chrono>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>

#include "trainer/loss/assigner.h"
#include "trainer/loss/assigner_kernels.h"
#include "trainer/loss/box_buckets.h"
#include "trainer/loss/kernels/assign_targets.h"
#include "trainer/loss/kernels/pair_metric.h"
#include "trainer/loss/pair_metrics.h"
#include "trainer/model/box_ops.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {
namespace {

at::Tensor F(std::vector<float> v) { return at::tensor(v); }

at::Tensor Labels(std::vector<std::vector<float>> rows) {
  auto t = at::zeros({static_cast<int64_t>(rows.size()), 6});
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < 6; ++j) t[i][j] = rows[i][j];
  }
  return t;
}

TEST(Loss, DistributionFocalLossKnownValues) {
  // Mass split evenly between bins 3 and 4, target 3.5: each side contributes 0.5 * -log(0.5).
  auto logits = at::full({16}, -1e9f);
  logits[3] = 0;
  logits[4] = 0;
  EXPECT_NEAR(DistributionFocalLoss(logits.view({1, 16}), F({3.5f})).item<float>(), std::log(2.0), 1e-5);
  // Uniform prediction: cross-entropy log(16) against any target.
  auto uniform = at::zeros({16});
  EXPECT_NEAR(DistributionFocalLoss(uniform.view({1, 16}), F({7.25f})).item<float>(), std::log(16.0), 1e-5);
  // Target 2.25 against a peaked distribution: 0.75 * CE(bin 2) + 0.25 * CE(bin 3).
  auto peaked = at::zeros({16});
  peaked[2] = 3;
  auto logp = peaked.log_softmax(0);
  const double expect = -0.75 * logp[2].item<double>() - 0.25 * logp[3].item<double>();
  EXPECT_NEAR(DistributionFocalLoss(peaked.view({1, 16}), F({2.25f})).item<float>(), expect, 1e-5);
  // Targets past the last bin clamp to 14.99 (bins 14 / 15, weights 0.01 / 0.99).
  auto far = DistributionFocalLoss(peaked.view({1, 1, 16}).expand({2, 1, 16}), F({40.0f, -3.0f}).view({2, 1}));
  ASSERT_EQ(far.sizes(), (at::IntArrayRef{2, 1}));
  EXPECT_NEAR(far[0][0].item<double>(), -0.01 * logp[14].item<double>() - 0.99 * logp[15].item<double>(), 1e-5);
  EXPECT_NEAR(far[1][0].item<double>(), -logp[0].item<double>(), 1e-5);  // negative targets clamp to bin 0
}

TEST(Loss, MaxBoxesPerImageAndValidation) {
  auto labels = Labels({{0, 1, .5, .5, .1, .1}, {1, 0, .5, .5, .1, .1}, {1, 2, .2, .2, .1, .1}});
  EXPECT_EQ(MaxBoxesPerImage(labels, 2).value(), 2);
  EXPECT_EQ(MaxBoxesPerImage(at::zeros({0, 6}), 4).value(), 0);
  EXPECT_FALSE(MaxBoxesPerImage(labels, 1).ok());        // batch index 1 out of range
  EXPECT_FALSE(MaxBoxesPerImage(labels, 2, 2).ok());     // class 2 with nc = 2
  EXPECT_FALSE(MaxBoxesPerImage(at::zeros({3, 5}), 2).ok());
}

TEST(Loss, PreprocessTargetsPadsPerImageInPixels) {
  // Rows out of batch order: the image-1 rows keep their relative order.
  auto labels = Labels({{1, 3, .5, .5, .5, .25}, {0, 1, .25, .25, .5, .5}, {1, 4, .1, .1, .2, .2}});
  auto t = PreprocessTargets(labels, 3, 2, /*img_h=*/64, /*img_w=*/128);
  ASSERT_EQ(t.sizes(), (at::IntArrayRef{3, 2, 5}));
  EXPECT_TRUE(at::allclose(t[0][0], F({1.0f, 0, 0, 64, 32})));
  EXPECT_TRUE(at::allclose(t[0][1], at::zeros({5})));
  EXPECT_TRUE(at::allclose(t[1][0], F({3.0f, 32, 24, 96, 40})));
  EXPECT_TRUE(at::allclose(t[1][1], F({4.0f, 0, 0, 25.6f, 12.8f})));
  EXPECT_TRUE(at::allclose(t[2], at::zeros({2, 5})));
  EXPECT_EQ(PreprocessTargets(at::zeros({0, 6}), 2, 0, 64, 64).sizes(), (at::IntArrayRef{2, 0, 5}));
}

// 4x4 grid of stride-8 anchors on a 32x32 image; every anchor predicts a 16x16 box centred on itself.
struct TinyGrid {
  at::Tensor anchors;    // (16, 2) pixels
  at::Tensor pd_bboxes;  // (1, 16, 4)
  TinyGrid() {
    anchors = MakeAnchors({{4, 4}}, {8.0}, at::TensorOptions().dtype(at::kFloat)).points * 8;
    pd_bboxes = at::cat({anchors - 8, anchors + 8}, 1).unsqueeze(0);
  }
  int64_t Index(float x, float y) const { return static_cast<int64_t>((y - 4) / 8) * 4 + static_cast<int64_t>((x - 4) / 8); }
};

// Random boxes, predictions and anchors for the pair metrics: a padded row, most pairs outside the boxes,
// enough inside them to compare; class scores both per (image, anchor, class) and gathered per pair.
struct RandomPairs {
  at::Tensor gt, pd, anchors, valid, pd_scores, labels, box_scores;
  RandomPairs(int64_t bs, int64_t nmax, int64_t na, int64_t nc, uint64_t seed) {
    at::manual_seed(seed);
    auto xy = at::rand({bs, nmax, 2}) * 200;
    gt = at::cat({xy, xy + at::rand({bs, nmax, 2}) * 150 + 1}, -1);
    gt[bs - 1][nmax - 1].zero_();  // a padded row
    auto pxy = at::rand({bs, na, 2}) * 300;
    pd = at::cat({pxy, pxy + at::rand({bs, na, 2}) * 100}, -1);
    anchors = at::rand({na, 2}) * 320;
    valid = gt.sum(-1, true).gt(0);
    pd_scores = at::rand({bs, na, nc});
    labels = at::randint(nc, {bs, nmax}, at::kLong);
    box_scores = pd_scores.transpose(1, 2).gather(1, labels.unsqueeze(-1).expand({bs, nmax, na}));
  }
};

// The pair metrics (pair_metrics.h) against their definitions written out here: Ultralytics' in-box test
// (least distance to an edge > eps) and box_ops.h's BboxIoU. On the CPU the same ops run: equal to the bit.
// On CUDA ATen's CUDA kernels: equal within float rounding.
TEST(PairMetrics, EqualTheInBoxTestAndBboxIoU) {
  std::vector<at::Device> devices{at::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(at::kCUDA, 0);
  const RandomPairs r(2, 5, 300, 3, 11);
  const int64_t na = 300;
  const double eps = 1e-9;
  auto ax = r.anchors.select(1, 0).view({1, 1, na}), ay = r.anchors.select(1, 1).view({1, 1, na});
  const at::Tensor& gt = r.gt;
  auto edge = at::minimum(at::minimum(ax - gt.select(-1, 0).unsqueeze(-1), ay - gt.select(-1, 1).unsqueeze(-1)),
                          at::minimum(gt.select(-1, 2).unsqueeze(-1) - ax, gt.select(-1, 3).unsqueeze(-1) - ay));
  auto mask = edge.gt(eps).logical_and(r.valid);
  auto ciou = BboxIoU(gt.unsqueeze(2), r.pd.unsqueeze(1), IoUKind::kCIoU).clamp_min(0);
  auto overlaps = at::where(mask, ciou, at::zeros({}));
  auto align = at::where(mask, r.box_scores, at::zeros({})).pow(0.5) * overlaps.pow(6.0);
  ASSERT_GT(mask.sum().item<int64_t>(), 20);  // enough pairs inside boxes to compare
  for (const auto& device : devices) {
    SCOPED_TRACE(device.str());
    PairMetrics m = ComputePairMetrics(gt.to(device), r.pd.to(device), r.anchors.to(device), r.valid.to(device),
                                       r.box_scores.to(device), 0.5, 6.0, eps);
    EXPECT_TRUE(at::equal(m.mask.cpu(), mask));
    if (device.is_cpu()) {
      EXPECT_TRUE(at::equal(m.overlaps, overlaps));
      EXPECT_TRUE(at::equal(m.align_metric, align));
    } else {
      EXPECT_TRUE(at::allclose(m.overlaps.cpu(), overlaps, 1e-5, 1e-6));
      EXPECT_TRUE(at::allclose(m.align_metric.cpu(), align, 1e-4, 1e-7));
    }
  }
}

// The CUDA kernel's per-thread work (kernels/pair_metric.h, WritePairMetric), run here on the host over the
// arguments the CUDA path prepares (PreparePairMetrics), against the ATen ops: the same masks, values within
// the rounding of atan and pow (ATen's CPU kernels vectorise them). CI has no GPU, so this is where the
// kernel's arithmetic and indexing are checked there.
TEST(PairMetrics, KernelFunctionEqualsTheATenOps) {
  const int64_t bs = 2, nmax = 6, na = 400, nc = 4;
  const RandomPairs r(bs, nmax, na, nc, 5);
  const double eps = 1e-9;
  PairMetrics want = ComputePairMetrics(r.gt, r.pd, r.anchors, r.valid, r.box_scores, 0.5, 6.0, eps);
  const PairMetricsCall call = PreparePairMetrics(r.gt, r.pd, r.anchors, r.valid, r.pd_scores, r.labels, 0.5, 6.0, eps);
  for (int64_t row = 0; row < bs * nmax; ++row) {
    for (int64_t a = 0; a < na; ++a) kernels::WritePairMetric(call.args, row, a);
  }
  ASSERT_GT(want.mask.sum().item<int64_t>(), 50);
  EXPECT_TRUE(at::equal(call.out.mask, want.mask));
  EXPECT_TRUE(at::allclose(call.out.overlaps, want.overlaps, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(call.out.align_metric, want.align_metric, 1e-4, 1e-7));
  EXPECT_FALSE(AssignerKernelsApply(r.pd_scores));  // CPU tensors take the ATen ops
}

// The assignment kernels' per-thread steps (kernels/assign_targets.h), run here on the host as loops in
// their order over the arguments the CUDA path prepares (PrepareAssignTargets), against the dense ATen
// assigner on the same pair metrics and top-k: equal to the bit (the same float operations on the same
// values). Several boxes overlap, so anchors picked by more than one box are resolved too.
TEST(Assigner, KernelStepsEqualTheDenseAssigner) {
  const int64_t bs = 3, nmax = 8, na = 500, nc = 5, topk = 10;
  const RandomPairs r(bs, nmax, na, nc, 9);
  AssignerOptions opt;
  opt.num_classes = nc;
  opt.topk = topk;
  auto gt_labels = r.labels.to(at::kFloat).unsqueeze(-1);
  const Assignment want = TaskAlignedAssigner(opt)(r.pd_scores, r.pd, r.anchors, gt_labels, r.gt, r.valid);

  PairMetrics pairs = ComputePairMetrics(r.gt, r.pd, r.anchors, r.valid, r.box_scores, opt.alpha, opt.beta, opt.eps);
  auto topk_idxs = std::get<1>(pairs.align_metric.topk(topk, -1, true));
  const AssignTargetsCall call = PrepareAssignTargets(pairs, topk_idxs, r.labels, r.gt, nc, opt.eps);
  const kernels::AssignTargetsArgs& t = call.args;
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t m = 0; m < nmax; ++m)
      for (int64_t j = 0; j < topk; ++j) kernels::MarkPick(t, b, m, j);
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t a = 0; a < na; ++a) kernels::ChooseBox(t, b, a);
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t a = 0; a < na; ++a)
      for (int64_t c = 0; c < nc; ++c) kernels::WriteScore(t, b, a, c);

  const Assignment& got = call.out;
  ASSERT_GT(call.picks.gt(1).sum().item<int64_t>(), 0);  // some anchors picked by several boxes
  ASSERT_GT(want.fg_mask.sum().item<int64_t>(), 30);
  EXPECT_TRUE(at::equal(got.fg_mask, want.fg_mask));
  EXPECT_TRUE(at::equal(got.target_gt_idx, want.target_gt_idx));
  EXPECT_TRUE(at::equal(got.target_labels, want.target_labels));
  EXPECT_TRUE(at::equal(got.target_bboxes, want.target_bboxes));
  EXPECT_TRUE(at::equal(got.target_scores, want.target_scores));
}

// The kernels themselves on CUDA (skipped without a GPU or where the build has no nvcc): the pair metrics
// against the ATen ops at a training-sized width, and whole assignments with the kernels against
// assignments without them.
TEST(PairMetrics, KernelEqualsTheATenOpsOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const at::Device cuda(at::kCUDA, 0);
  if (!AssignerKernelsApply(at::zeros({1, 1, 1}, at::TensorOptions(cuda)))) {
    GTEST_SKIP() << "this build has no CUDA kernels (no nvcc at configure time)";
  }
  const int64_t bs = 4, nmax = 24, na = 8400, nc = 80;
  const RandomPairs r(bs, nmax, na, nc, 3);
  const double eps = 1e-9;
  PairMetrics aten = ComputePairMetrics(r.gt.to(cuda), r.pd.to(cuda), r.anchors.to(cuda), r.valid.to(cuda),
                                        r.box_scores.to(cuda), 0.5, 6.0, eps);
  PairMetrics kernel = ComputePairMetricsKernel(r.gt.to(cuda), r.pd.to(cuda), r.anchors.to(cuda), r.valid.to(cuda),
                                                r.pd_scores.to(cuda), r.labels.to(cuda), 0.5, 6.0, eps);
  ASSERT_GT(aten.mask.sum().item<int64_t>(), 1000);
  EXPECT_TRUE(at::equal(kernel.mask, aten.mask));
  EXPECT_TRUE(at::allclose(kernel.overlaps, aten.overlaps, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(kernel.align_metric, aten.align_metric, 1e-4, 1e-7));

  AssignerOptions with, without;
  with.num_classes = without.num_classes = nc;
  without.cuda_kernels = false;
  auto labels = r.labels.to(at::kFloat).unsqueeze(-1).to(cuda);
  auto assign_on_cuda = [&](const TaskAlignedAssigner& assign) {
    return assign(r.pd_scores.to(cuda), r.pd.to(cuda), r.anchors.to(cuda), labels, r.gt.to(cuda), r.valid.to(cuda));
  };
  Assignment a = assign_on_cuda(TaskAlignedAssigner(with)), b = assign_on_cuda(TaskAlignedAssigner(without));
  ASSERT_GT(b.fg_mask.sum().item<int64_t>(), 100);
  EXPECT_TRUE(at::equal(a.fg_mask, b.fg_mask));
  EXPECT_TRUE(at::equal(a.target_gt_idx, b.target_gt_idx));
  EXPECT_TRUE(at::equal(a.target_labels, b.target_labels));
  EXPECT_TRUE(at::equal(a.target_bboxes, b.target_bboxes));
  EXPECT_TRUE(at::allclose(a.target_scores, b.target_scores, 1e-4, 1e-6));
}

TEST(Assigner, PicksTopkAnchorsInsideTheBox) {
  TinyGrid g;
  auto scores = at::full({1, 16, 3}, 0.1f);
  // The box (0,0,16,16) of class 1 contains anchors (4,4), (12,4), (4,12), (12,12).
  const int64_t a0 = g.Index(4, 4), a1 = g.Index(12, 4), a2 = g.Index(4, 12), a3 = g.Index(12, 12);
  scores[0][a0][1] = 0.9f;
  scores[0][a1][1] = 0.8f;
  scores[0][a2][1] = 0.7f;
  scores[0][a3][1] = 0.6f;
  auto gt_labels = F({1.0f}).view({1, 1, 1});
  auto gt_bboxes = F({0.0f, 0, 16, 16}).view({1, 1, 4});
  auto mask_gt = at::ones({1, 1, 1});
  AssignerOptions opt;
  opt.topk = 2;
  opt.num_classes = 3;
  auto r = TaskAlignedAssigner(opt)(scores, g.pd_bboxes, g.anchors, gt_labels, gt_bboxes, mask_gt);
  auto fg = r.fg_mask[0];
  EXPECT_EQ(fg.sum().item<int64_t>(), 2);
  EXPECT_TRUE(fg[a0].item<bool>());
  EXPECT_TRUE(fg[a1].item<bool>());
  EXPECT_EQ(r.target_labels[0][a0].item<int64_t>(), 1);
  EXPECT_TRUE(at::allclose(r.target_bboxes[0][a1], F({0.0f, 0, 16, 16})));
  // All four predicted boxes overlap the box equally, so the normalised targets are
  // sqrt(score / best score) * overlap (alpha 0.5; the overlap factor cancels in the ratio).
  const float ov = BboxIoU(gt_bboxes.view({4}), g.pd_bboxes[0][a0], IoUKind::kCIoU).item<float>();
  ASSERT_GT(ov, 0.0f);
  EXPECT_NEAR(r.target_scores[0][a0][1].item<float>(), ov, 1e-5);
  EXPECT_NEAR(r.target_scores[0][a1][1].item<float>(), std::sqrt(0.8 / 0.9) * ov, 1e-5);
  EXPECT_EQ(r.target_scores[0][a1][0].item<float>(), 0.0f);
  EXPECT_EQ(r.target_scores[0][a2].sum().item<float>(), 0.0f);  // not in the top 2
  EXPECT_EQ(r.target_scores[0][g.Index(20, 20)].sum().item<float>(), 0.0f);
}

TEST(Assigner, SharedAnchorsGoToTheBoxOfHighestOverlap) {
  TinyGrid g;
  auto scores = at::full({1, 16, 2}, 0.5f);
  // A = (0,0,16,16) class 0 and B = (10,0,26,16) class 1 share anchors (12,4) and (12,12); their predicted
  // boxes overlap A more (CIoU 0.351 vs 0.247), so those go to A.
  auto gt_labels = F({0.0f, 1.0f}).view({1, 2, 1});
  auto gt_bboxes = F({0.0f, 0, 16, 16, 10, 0, 26, 16}).view({1, 2, 4});
  auto mask_gt = at::ones({1, 2, 1});
  AssignerOptions opt;
  opt.num_classes = 2;
  auto r = TaskAlignedAssigner(opt)(scores, g.pd_bboxes, g.anchors, gt_labels, gt_bboxes, mask_gt);
  auto fg = r.fg_mask[0];
  EXPECT_EQ(fg.sum().item<int64_t>(), 6);
  for (auto [x, y] : {std::pair{4.f, 4.f}, {12.f, 4.f}, {4.f, 12.f}, {12.f, 12.f}}) {
    EXPECT_TRUE(fg[g.Index(x, y)].item<bool>());
    EXPECT_EQ(r.target_gt_idx[0][g.Index(x, y)].item<int64_t>(), 0) << x << "," << y;
    EXPECT_EQ(r.target_labels[0][g.Index(x, y)].item<int64_t>(), 0);
  }
  for (auto [x, y] : {std::pair{20.f, 4.f}, {20.f, 12.f}}) {
    EXPECT_TRUE(fg[g.Index(x, y)].item<bool>());
    EXPECT_EQ(r.target_gt_idx[0][g.Index(x, y)].item<int64_t>(), 1);
    EXPECT_GT(r.target_scores[0][g.Index(x, y)][1].item<float>(), 0.0f);
  }
  EXPECT_FALSE(fg[g.Index(28, 4)].item<bool>());
}

TEST(Assigner, PaddedRowsAndEmptyBatches) {
  TinyGrid g;
  auto scores = at::full({2, 16, 2}, 0.5f);
  auto pd = g.pd_bboxes.expand({2, 16, 4}).contiguous();
  // Image 0 has one real box, image 1 only padding.
  auto gt_labels = at::zeros({2, 1, 1});
  auto gt_bboxes = F({0.0f, 0, 16, 16, 0, 0, 0, 0}).view({2, 1, 4});
  auto mask_gt = gt_bboxes.sum(2, true).gt(0);
  AssignerOptions opt;
  opt.num_classes = 2;
  auto r = TaskAlignedAssigner(opt)(scores, pd, g.anchors, gt_labels, gt_bboxes, mask_gt);
  EXPECT_EQ(r.fg_mask[0].sum().item<int64_t>(), 4);
  EXPECT_EQ(r.fg_mask[1].sum().item<int64_t>(), 0);
  EXPECT_EQ(r.target_scores[1].sum().item<float>(), 0.0f);
  auto empty = TaskAlignedAssigner(opt)(scores, pd, g.anchors, at::zeros({2, 0, 1}), at::zeros({2, 0, 4}),
                                        at::zeros({2, 0, 1}));
  EXPECT_EQ(empty.fg_mask.sum().item<int64_t>(), 0);
  EXPECT_EQ(empty.target_labels[0][0].item<int64_t>(), 2);  // background index = num_classes
}

TEST(Loss, ShapesValidationAndEmptyLabels) {
  at::manual_seed(0);
  DetectionLoss loss(2, {8, 16, 32});
  std::vector<at::Tensor> feats{at::randn({2, 66, 8, 8}), at::randn({2, 66, 4, 4}), at::randn({2, 66, 2, 2})};
  auto empty = loss(feats, at::zeros({0, 6}), 0);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  auto items = empty->items;
  EXPECT_EQ(items[0].item<float>(), 0.0f);  // no foreground: no box / dfl terms
  EXPECT_EQ(items[2].item<float>(), 0.0f);
  EXPECT_GT(items[1].item<float>(), 0.0f);  // every anchor is a negative for BCE
  EXPECT_NEAR(empty->total.item<float>(), items.sum().item<float>() * 2, 1e-4);

  std::vector<at::Tensor> bad{feats[0], feats[1]};
  EXPECT_FALSE(loss(bad, at::zeros({0, 6}), 0).ok());
  std::vector<at::Tensor> bad_ch{at::randn({2, 65, 8, 8}), feats[1], feats[2]};
  EXPECT_FALSE(loss(bad_ch, at::zeros({0, 6}), 0).ok());
  EXPECT_FALSE(loss(feats, at::zeros({3, 5}), 1).ok());
}

// The head's outputs reach the loss NCHW or channels_last (CUDA's layout), in float or half (AMP): each
// gives the same loss and the same gradients as the float NCHW outputs (half: those of its rounded values).
TEST(Loss, OutputsInEveryLayoutGiveTheSameLossAndGradients) {
  at::manual_seed(4);
  DetectionLoss loss(3, {8, 16, 32});
  std::vector<at::Tensor> base{at::randn({2, 67, 8, 8}), at::randn({2, 67, 4, 4}), at::randn({2, 67, 2, 2})};
  auto labels = Labels({{0, 1, .5, .5, .4, .3}, {1, 2, .3, .6, .2, .5}, {1, 0, .7, .2, .3, .3}});
  auto run = [&](const std::function<at::Tensor(const at::Tensor&)>& layout) {
    std::vector<at::Tensor> leaves, feats;
    for (const auto& f : base) {
      leaves.push_back(layout(f).detach().requires_grad_());
      feats.push_back(leaves.back());
    }
    auto out = loss(feats, labels, 2);
    EXPECT_TRUE(out.ok());
    out->total.backward();
    std::vector<at::Tensor> grads{out->items};
    for (const auto& l : leaves) grads.push_back(l.grad().to(at::kFloat).contiguous());
    return grads;
  };
  const auto plain = run([](const at::Tensor& f) { return f; });
  const auto nhwc = run([](const at::Tensor& f) { return f.contiguous(at::MemoryFormat::ChannelsLast); });
  ASSERT_GT(plain[0][0].item<float>(), 0.0f);  // boxes were assigned
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(at::allclose(nhwc[i], plain[i], 1e-6, 1e-7)) << i;
  // Half outputs: the loss of their float values, gradients rounded to half on the way back.
  base = {base[0].to(at::kHalf).to(at::kFloat), base[1].to(at::kHalf).to(at::kFloat), base[2].to(at::kHalf).to(at::kFloat)};
  const auto rounded = run([](const at::Tensor& f) { return f; });
  const auto half = run([](const at::Tensor& f) { return f.to(at::kHalf); });
  EXPECT_TRUE(at::allclose(half[0], rounded[0], 1e-6, 1e-7));
  for (size_t i = 1; i < half.size(); ++i) EXPECT_TRUE(at::allclose(half[i], rounded[i], 1e-3, 1e-6)) << i;
}

TEST(Loss, ClassTermWithoutBoxesIsSummedBce) {
  // With no boxes the class term is
  // cls_gain * sum(BCE(logit, 0)) / max(sum(targets), 1) = 0.5 * sum(softplus(logits)).
  DetectionLoss loss(1, {8, 16, 32});
  std::vector<at::Tensor> feats{at::zeros({1, 65, 2, 2}), at::zeros({1, 65, 1, 1}), at::zeros({1, 65, 1, 1})};
  feats[0].narrow(1, 64, 1).fill_(-2.0);
  auto out = loss(feats, at::zeros({0, 6}), 0);
  ASSERT_TRUE(out.ok());
  const double softplus = std::log1p(std::exp(-2.0)) * 4 + std::log(2.0) * 2;
  EXPECT_NEAR(out->items[1].item<double>(), 0.5 * softplus, 1e-5);
}

TEST(BoxBuckets, PowersOfTwoAndOneAndAHalfTimesThem) {
  const std::vector<std::pair<int64_t, int64_t>> cases{{0, 1},   {1, 1},   {2, 2},   {3, 3},    {4, 4},
                                                       {5, 6},   {7, 8},   {9, 12},  {13, 16},  {17, 24},
                                                       {25, 32}, {33, 48}, {64, 64}, {65, 96},  {300, 384}};
  for (const auto& [count, width] : cases) EXPECT_EQ(BoxCountBucket(count), width) << count;
}

// The loss and the gradients of a batch padded to its bucket (and far beyond) equal the unpadded batch's:
// what lets a captured step replay one graph for every batch of a bucket.
TEST(BoxBuckets, PaddedTargetsGiveTheSameLoss) {
  at::manual_seed(3);
  DetectionLoss loss(3, {8, 16, 32});
  const std::vector<at::Tensor> base{at::randn({3, 67, 8, 8}), at::randn({3, 67, 4, 4}), at::randn({3, 67, 2, 2})};
  // Three boxes in image 0, one in image 2, none in image 1; two overlap so an anchor is contested.
  const auto labels = Labels({{0, 0, .3, .3, .3, .4}, {0, 1, .35, .3, .3, .4}, {2, 2, .5, .5, .6, .6},
                              {0, 2, .7, .7, .2, .2}});
  const int64_t exact = MaxBoxesPerImage(labels, 3, 3).value();
  ASSERT_EQ(exact, 3);
  auto run = [&](const at::Tensor* labels_or_null, int64_t width) {
    std::vector<at::Tensor> feats;
    for (const auto& f : base) feats.push_back(f.clone().requires_grad_(true));
    Result<LossOutput> out = labels_or_null != nullptr
                                 ? loss(feats, *labels_or_null, width)
                                 : loss.FromTargets(feats, PreprocessTargets(labels, 3, width, 64, 64));
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    out->total.backward();
    std::vector<at::Tensor> grads{out->items};
    for (const auto& f : feats) grads.push_back(f.grad());
    return grads;
  };
  const auto reference = run(&labels, exact);
  EXPECT_GT(reference[0][0].item<float>(), 0.0f);  // boxes were assigned: the comparison covers the box terms
  for (int64_t width : {BoxCountBucket(exact), int64_t{64}}) {
    const auto padded = run(nullptr, width);
    for (size_t k = 0; k < reference.size(); ++k) {
      EXPECT_TRUE(at::allclose(padded[k], reference[k], 1e-6, 1e-7)) << "width " << width << " tensor " << k;
    }
  }

  // No boxes at all: one padded row gives the loss of none.
  const auto none = Labels({});
  const auto empty = run(&none, 0);
  std::vector<at::Tensor> feats;
  for (const auto& f : base) feats.push_back(f.clone().requires_grad_(true));
  auto one_row = loss.FromTargets(feats, at::zeros({3, BoxCountBucket(0), 5}));
  ASSERT_TRUE(one_row.ok());
  one_row->total.backward();
  EXPECT_TRUE(at::allclose(one_row->items, empty[0], 1e-6, 1e-7));
  EXPECT_TRUE(at::allclose(feats[0].grad(), empty[1], 1e-6, 1e-7));
  EXPECT_FALSE(loss.FromTargets(feats, at::zeros({3, 4, 6})).ok());  // not (B, M, 5)
}

TEST(Loss, DecreasesWhenOverfittingAFixedBatch) {
  at::manual_seed(0);
  const auto start = std::chrono::steady_clock::now();
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 2));
  model->train();
  DetectionLoss loss(2, model->strides());
  auto images = at::rand({2, 3, 64, 64});
  auto labels = Labels({{0, 0, .3, .3, .3, .4}, {0, 1, .7, .6, .4, .5}, {1, 1, .5, .5, .6, .6}});
  const int64_t max_boxes = MaxBoxesPerImage(labels, 2, 2).value();
  std::vector<at::Tensor> params;
  for (auto& p : model->parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  // loss is scaled by the batch size as in Ultralytics, hence the small lr for plain SGD here.
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.001).momentum(0.9).nesterov(true));
  std::vector<double> history;
  std::vector<at::Tensor> first_items;
  at::Tensor last_items;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    auto out = loss(model->forward(images).feats, labels, max_boxes);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(std::isfinite(out->total.item<double>()));
    out->total.backward();
    opt.step();
    history.push_back(out->total.item<double>());
    last_items = out->items;
    if (step == 0) {
      first_items.push_back(out->items);
      EXPECT_GT(out->items[0].item<float>(), 0.0f);  // boxes were assigned anchors
      EXPECT_GT(out->items[2].item<float>(), 0.0f);
    }
  }
  // Measured: 23.1 -> ~4 over 30 steps; every term falls.
  const double tail = (history[27] + history[28] + history[29]) / 3;
  EXPECT_LT(tail, 0.35 * history.front()) << "first " << history.front() << " last " << history.back();
  for (int k = 0; k < 3; ++k) EXPECT_LT(last_items[k].item<float>(), first_items[0][k].item<float>()) << k;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 60.0);
}

}  // namespace
}  // namespace yc::trainer
