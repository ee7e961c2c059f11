#include "trainer/engine/optimizer.h"

#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "trainer/engine/lr_schedule.h"
#include "trainer/model/detection_model.h"

namespace yc::trainer {
namespace {

int64_t Numel(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel();
  return n;
}

TEST(Optimizer, AutoRule) {
  auto big = ResolveOptimizer("auto", 0.01, 0.937, 0.1, 80, 184900).value();
  EXPECT_EQ(big.kind, OptimizerKind::kSGD);
  EXPECT_DOUBLE_EQ(big.lr, 0.01);
  EXPECT_DOUBLE_EQ(big.momentum, 0.9);
  EXPECT_DOUBLE_EQ(big.warmup_bias_lr, 0.0);
  auto small = ResolveOptimizer("AUTO", 0.01, 0.937, 0.1, 80, 8000).value();
  EXPECT_EQ(small.kind, OptimizerKind::kAdamW);
  EXPECT_DOUBLE_EQ(small.lr, 0.000119);  // round(0.01 / 84, 6)
  EXPECT_EQ(ResolveOptimizer("auto", 0.01, 0.937, 0.1, 80, 10000).value().kind, OptimizerKind::kAdamW);
  auto sgd = ResolveOptimizer("sgd", 0.02, 0.937, 0.1, 80, 10).value();
  EXPECT_EQ(sgd.kind, OptimizerKind::kSGD);
  EXPECT_DOUBLE_EQ(sgd.lr, 0.02);
  EXPECT_DOUBLE_EQ(sgd.warmup_bias_lr, 0.1);
  EXPECT_FALSE(ResolveOptimizer("lion", 0.01, 0.9, 0.1, 80, 10).ok());
  EXPECT_FALSE(ResolveOptimizer("SGD", 0.01, 0.0, 0.1, 80, 10).ok());
  EXPECT_EQ(OptimizerIterations(118287, 64, 64, 100), 184900);
  EXPECT_EQ(OptimizerIterations(5120, 16, 64, 100), 8000);
  EXPECT_EQ(AccumulateSteps(64, 16), 4);
  EXPECT_EQ(AccumulateSteps(64, 128), 1);
  EXPECT_EQ(AccumulateSteps(64, 24), 3);  // round(2.67)
  EXPECT_DOUBLE_EQ(ScaledWeightDecay(5e-4, 16, 4, 64), 5e-4);
}

TEST(Optimizer, ThreeGroupsLikeUltralytics) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 80));
  auto g = SplitParameters(*model);
  int64_t bn_layers = 0, biased_convs = 0;
  for (const auto& m : model->modules()) {
    if (dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) ++bn_layers;
    if (auto* c = dynamic_cast<torch::nn::Conv2dImpl*>(m.get())) biased_convs += c->options.bias() ? 1 : 0;
  }
  EXPECT_EQ(static_cast<int64_t>(g.norm_weights.size()), bn_layers);
  EXPECT_EQ(static_cast<int64_t>(g.biases.size()), bn_layers + biased_convs);
  EXPECT_EQ(biased_convs, 6);  // the head's final 1x1 convs
  EXPECT_EQ(Numel(g.biases) + Numel(g.decay) + Numel(g.norm_weights), 3157184);  // all but the frozen DFL

  auto opt = BuildOptimizer(*model, ResolveOptimizer("SGD", 0.01, 0.937, 0.1, 80, 0).value(), 5e-4);
  ASSERT_EQ(opt->param_groups().size(), 3u);
  auto& o0 = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[0].options());
  auto& o1 = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[1].options());
  auto& o2 = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[2].options());
  EXPECT_EQ(o0.weight_decay(), 0.0);
  EXPECT_EQ(o1.weight_decay(), 5e-4);
  EXPECT_EQ(o2.weight_decay(), 0.0);
  EXPECT_TRUE(o1.nesterov());
  EXPECT_EQ(o1.momentum(), 0.937);
  EXPECT_EQ(opt->param_groups()[0].params().size(), g.biases.size());

  auto adamw = BuildOptimizer(*model, ResolveOptimizer("auto", 0.01, 0.937, 0.1, 80, 100).value(), 5e-4);
  auto& a1 = static_cast<torch::optim::AdamWOptions&>(adamw->param_groups()[1].options());
  EXPECT_EQ(std::get<0>(a1.betas()), 0.9);
  EXPECT_EQ(a1.weight_decay(), 5e-4);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(adamw->param_groups()[0].options()).weight_decay(), 0.0);
  EXPECT_FALSE(SetMomentum(*adamw, 1, 0.5));  // Adam-family: no momentum entry
}

TEST(LrSchedule, FactorsAndWarmup) {
  LrScheduleOptions o;
  o.epochs = 100;
  o.batch = 16;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.Factor(0), 1.0);
  EXPECT_DOUBLE_EQ(s.Factor(50), 0.5 * 0.99 + 0.01);
  EXPECT_DOUBLE_EQ(s.Factor(100), 0.01);
  o.cos_lr = true;
  EXPECT_NEAR(LrSchedule(o).Factor(50), 0.505, 1e-12);
  EXPECT_NEAR(LrSchedule(o).Factor(100), 0.01, 1e-12);

  EXPECT_EQ(s.WarmupIterations(8), 100);        // max(24, 100)
  EXPECT_EQ(s.WarmupIterations(1849), 5547);
  const int64_t nb = 50;                         // nw = 150
  auto w0 = s.At(0, 0, nb, 0.01);
  EXPECT_TRUE(w0.warmup);
  EXPECT_DOUBLE_EQ(w0.lr[0], 0.1);
  EXPECT_DOUBLE_EQ(w0.lr[1], 0.0);
  EXPECT_DOUBLE_EQ(w0.momentum, 0.8);
  EXPECT_EQ(w0.accumulate, 1);
  auto mid = s.At(1, 75, nb, 0.01);  // halfway through warmup, epoch 1
  const double target = 0.01 * s.Factor(1);
  EXPECT_NEAR(mid.lr[0], (0.1 + target) / 2, 1e-12);
  EXPECT_NEAR(mid.lr[2], target / 2, 1e-12);
  EXPECT_NEAR(mid.momentum, (0.8 + 0.937) / 2, 1e-12);
  EXPECT_EQ(mid.accumulate, 2);  // round(2.5) = 2, half to even as numpy
  auto end = s.At(3, 150, nb, 0.01);
  EXPECT_TRUE(end.warmup);
  EXPECT_NEAR(end.lr[0], 0.01 * s.Factor(3), 1e-12);
  EXPECT_EQ(end.accumulate, 4);
  auto after = s.At(3, 151, nb, 0.01);
  EXPECT_FALSE(after.warmup);
  EXPECT_FALSE(after.set_momentum);
  EXPECT_NEAR(after.lr[1], 0.01 * s.Factor(3), 1e-12);
  EXPECT_EQ(after.accumulate, 4);
  o.cos_lr = false;
  o.warmup_epochs = 0;
  EXPECT_EQ(LrSchedule(o).WarmupIterations(50), -1);
  EXPECT_FALSE(LrSchedule(o).At(0, 0, nb, 0.01).warmup);
}

TEST(LrSchedule, AppliesToTheOptimizer) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 2));
  auto opt = BuildOptimizer(*model, ResolveOptimizer("SGD", 0.01, 0.937, 0.1, 2, 0).value(), 5e-4);
  LrSchedule s(LrScheduleOptions{});
  ApplyStepSettings(*opt, s.At(0, 0, 10, 0.01));
  EXPECT_DOUBLE_EQ(GetLearningRate(*opt, 0), 0.1);
  EXPECT_DOUBLE_EQ(GetLearningRate(*opt, 1), 0.0);
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::SGDOptions&>(opt->param_groups()[1].options()).momentum(), 0.8);
  ApplyStepSettings(*opt, s.At(5, 5000, 10, 0.01));
  EXPECT_DOUBLE_EQ(GetLearningRate(*opt, 2), 0.01 * s.Factor(5));
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::SGDOptions&>(opt->param_groups()[1].options()).momentum(), 0.8);
}

}  // namespace
}  // namespace yc::trainer
