#include "trainer/model/detection_model.h"

#include <cmath>
#include <set>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

TEST(YOLOv8, ParameterCountsEqualUltralytics) {
  // yolov8.yaml summaries: parameters (gradients = parameters - 16 frozen DFL weights).
  const std::pair<ModelScale, int64_t> expected[] = {{ModelScale::kN, 3157200},
                                                     {ModelScale::kS, 11166560},
                                                     {ModelScale::kM, 25902640},
                                                     {ModelScale::kL, 43691520},
                                                     {ModelScale::kX, 68229648}};
  for (const auto& [scale, count] : expected) {
    DetectionModel model(ModelOptions(ModelFamily::kV8, scale, 80));
    EXPECT_EQ(CountParameters(*model), count) << ModelScaleName(scale);
    EXPECT_EQ(CountParameters(*model, /*trainable_only=*/true), count - 16) << ModelScaleName(scale);
  }
}

TEST(YOLOv8, ClassCountChangesOnlyTheClassBranch) {
  DetectionModel a(ModelOptions(ModelFamily::kV8, ModelScale::kN, 80)), b(ModelOptions(ModelFamily::kV8, ModelScale::kN, 1));
  // nc = 1: c3 = max(64, min(1, 100)) = 64, so cv3's convs shrink from 80 to 64 channels.
  EXPECT_LT(CountParameters(*b), CountParameters(*a));
  EXPECT_EQ(b->nc(), 1);
}

TEST(YOLOv8, ParseScale) {
  EXPECT_EQ(ParseModelScale("n").value(), ModelScale::kN);
  EXPECT_EQ(ParseModelScale("X").value(), ModelScale::kX);
  EXPECT_FALSE(ParseModelScale("yolov8x").ok());  // full names go through ParseModelName
  EXPECT_FALSE(ParseModelScale("q").ok());
  EXPECT_FALSE(ParseModelScale("").ok());
}

TEST(YOLOv8, StateDictNamesMatchUltralytics) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 80));
  std::set<std::string> names;
  for (const auto& p : model->named_parameters()) names.insert(p.key());
  for (const auto& b : model->named_buffers()) names.insert(b.key());
  for (const char* key : {"model.0.conv.weight", "model.0.bn.weight", "model.0.bn.running_mean",
                          "model.2.m.0.cv1.conv.weight", "model.9.cv2.bn.bias", "model.21.cv2.conv.weight",
                          "model.22.cv2.0.0.conv.weight", "model.22.cv2.2.2.bias", "model.22.cv3.1.2.weight",
                          "model.22.dfl.conv.weight"}) {
    EXPECT_TRUE(names.count(key)) << key;
  }
}

TEST(YOLOv8, InitialisationFollowsUltralytics) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 80));
  auto* bn = model->model->ptr(0)->as<ConvImpl>()->bn.get();
  EXPECT_DOUBLE_EQ(bn->options.eps(), 1e-3);
  EXPECT_DOUBLE_EQ(bn->options.momentum().value(), 0.03);
  auto& det = model->detect();
  const double strides[] = {8, 16, 32};
  for (size_t i = 0; i < 3; ++i) {
    auto box_bias = det.cv2->ptr(i)->as<torch::nn::SequentialImpl>()->ptr(2)->as<torch::nn::Conv2dImpl>()->bias;
    auto cls_bias = det.cv3->ptr(i)->as<torch::nn::SequentialImpl>()->ptr(2)->as<torch::nn::Conv2dImpl>()->bias;
    EXPECT_TRUE(at::all(box_bias == 1.0).item<bool>());
    const double expect = std::log(5.0 / 80 / std::pow(640.0 / strides[i], 2));
    EXPECT_NEAR(cls_bias[0].item<double>(), expect, 1e-6);
    EXPECT_NEAR(cls_bias[79].item<double>(), expect, 1e-6);
  }
  auto dfl = det.dfl->conv->weight;
  EXPECT_FALSE(dfl.requires_grad());
  EXPECT_TRUE(at::equal(dfl.view({-1}), at::arange(16, at::kFloat)));
}

TEST(YOLOv8, TrainAndEvalOutputs) {
  at::manual_seed(0);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  auto x = at::rand({2, 3, 64, 96});
  model->train();
  auto out = model->forward(x);
  ASSERT_EQ(out.feats.size(), 3u);
  EXPECT_EQ(out.feats[0].sizes(), (at::IntArrayRef{2, 67, 8, 12}));
  EXPECT_EQ(out.feats[1].sizes(), (at::IntArrayRef{2, 67, 4, 6}));
  EXPECT_EQ(out.feats[2].sizes(), (at::IntArrayRef{2, 67, 2, 3}));
  EXPECT_FALSE(out.pred.defined());

  model->eval();
  c10::NoGradGuard no_grad;
  out = model->forward(x);
  const int64_t a = 8 * 12 + 4 * 6 + 2 * 3;
  ASSERT_EQ(out.pred.sizes(), (at::IntArrayRef{2, 7, a}));
  // Scores are sigmoids of the raw class logits.
  auto logits0 = out.feats[0].reshape({2, 67, -1}).narrow(1, 64, 3);
  EXPECT_TRUE(at::allclose(out.pred.narrow(1, 4, 3).narrow(2, 0, 96), logits0.sigmoid()));
  // Decode one anchor by hand: level 1 (stride 16), cell (x=2, y=1) -> anchor index 96 + 1 * 6 + 2.
  const int64_t idx = 96 + 1 * 6 + 2;
  auto raw = out.feats[1][1].reshape({67, -1}).select(1, 1 * 6 + 2);
  auto dist = raw.narrow(0, 0, 64).view({4, 16}).softmax(1).matmul(at::arange(16, at::kFloat));
  const double ax = 2.5, ay = 1.5;
  const double x1 = ax - dist[0].item<double>(), y1 = ay - dist[1].item<double>();
  const double x2 = ax + dist[2].item<double>(), y2 = ay + dist[3].item<double>();
  auto p = out.pred[1].select(1, idx);
  EXPECT_NEAR(p[0].item<double>(), (x1 + x2) / 2 * 16, 1e-3);
  EXPECT_NEAR(p[1].item<double>(), (y1 + y2) / 2 * 16, 1e-3);
  EXPECT_NEAR(p[2].item<double>(), (x2 - x1) * 16, 1e-3);
  EXPECT_NEAR(p[3].item<double>(), (y2 - y1) * 16, 1e-3);
  // A second size rebuilds the anchor cache.
  auto out2 = model->forward(at::rand({1, 3, 32, 32}));
  EXPECT_EQ(out2.pred.size(2), 16 + 4 + 1);
  // Sizes that do not halve evenly are refused with an error, not a crash.
  EXPECT_THROW(model->forward(at::rand({1, 3, 48, 64})), c10::Error);
  EXPECT_THROW(model->forward(at::rand({1, 1, 64, 64})), c10::Error);
}

TEST(YOLOv8, CloneIsDeepAndEquivalent) {
  at::manual_seed(1);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 2));
  model->eval();
  auto copy = std::dynamic_pointer_cast<DetectionModelImpl>(model->clone());
  ASSERT_TRUE(copy);
  copy->eval();
  c10::NoGradGuard no_grad;
  auto x = at::rand({1, 3, 64, 64});
  EXPECT_TRUE(at::allclose(model->forward(x).pred, copy->forward(x).pred));
  // Independent storage: perturbing the copy leaves the original alone.
  copy->model->ptr(0)->as<ConvImpl>()->conv->weight.add_(1.0);
  EXPECT_FALSE(at::allclose(model->forward(x).pred, copy->forward(x).pred));
  EXPECT_EQ(CountParameters(*copy), CountParameters(*model));
}

TEST(YOLOv8, ChannelsLastGivesTheSameOutputs) {
  at::manual_seed(2);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 4));
  model->eval();
  c10::NoGradGuard no_grad;
  auto x = at::rand({1, 3, 64, 64});
  auto ref = model->forward(x).pred;
  ToChannelsLast(*model);
  auto w = model->model->ptr(0)->as<ConvImpl>()->conv->weight;
  EXPECT_TRUE(w.is_contiguous(at::MemoryFormat::ChannelsLast));
  auto got = model->forward(x.contiguous(at::MemoryFormat::ChannelsLast)).pred;
  EXPECT_TRUE(at::allclose(ref, got, 1e-4, 1e-3));
}

}  // namespace
}  // namespace yc::trainer
