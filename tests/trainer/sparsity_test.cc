// Network slimming (train --sparsity, trainer/model/prune/sparsity.h): which BatchNorms the L1 term reaches
// (trainer/model/prune/channel_graph.h), that it adds exactly S * sign(gamma) to their gradients and nothing to
// the exempt ones, that a few CPU steps with a large S drive the penalised scales toward zero, and the CLI's
// option (--sparsity, --sr, sr=) as args.yaml records it.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/engine/training_stack.h"
#include "trainer/model/prune/channel_widths.h"
#include "trainer/model/prune/sparsity.h"

namespace yc::trainer {
namespace {

using testing::CliRun;
using testing::TempDir;

bool Prunable(DetectionModelImpl& model, const std::string& path) {
  const ChannelGraph g = GraphOf(model);
  const ConvNode* n = g.Find(path);
  EXPECT_NE(n, nullptr) << path;
  return n != nullptr && n->prunable;
}

// The exemptions the docs list, on both families: residual chains, C2PSA's split and attention, depthwise
// convolutions and the head's last Conv2d; the rest is prunable.
TEST(Sparsity, ExemptsTheBatchNormsThatResidualsSplitsAndAttentionTie) {
  DetectionModel v8(ModelOptions(ModelFamily::kV8, ModelScale::kN, 4));
  EXPECT_FALSE(Prunable(*v8, "model.2.cv1"));       // its second half starts the shortcut chain
  EXPECT_FALSE(Prunable(*v8, "model.2.m.0.cv2"));   // added to its input
  EXPECT_TRUE(Prunable(*v8, "model.2.m.0.cv1"));    // a Bottleneck's hidden channels
  EXPECT_TRUE(Prunable(*v8, "model.2.cv2"));        // the block's output, cut in its consumers
  EXPECT_TRUE(Prunable(*v8, "model.12.cv1"));       // neck C2f: no shortcuts, halves pruned equally
  EXPECT_TRUE(Prunable(*v8, "model.12.m.0.cv2"));
  EXPECT_TRUE(Prunable(*v8, "model.9.cv1"));        // SPPF
  EXPECT_TRUE(Prunable(*v8, "model.22.cv3.2.1"));   // the head's inner Convs
  EXPECT_FALSE(Prunable(*v8, "model.22.cv3.2.2"));  // the class logits
  const std::vector<std::string> v8_names = SparsityTargetNames(*v8);
  EXPECT_EQ(std::count(v8_names.begin(), v8_names.end(), "model.2.m.0.cv1.bn.weight"), 1);
  EXPECT_EQ(std::count(v8_names.begin(), v8_names.end(), "model.2.m.0.cv2.bn.weight"), 0);

  DetectionModel y11(ModelOptions(ModelFamily::k11, ModelScale::kN, 4));
  EXPECT_FALSE(Prunable(*y11, "model.2.cv1"));           // C3k2 with Bottleneck shortcuts
  EXPECT_TRUE(Prunable(*y11, "model.6.cv1"));            // C3k2 of C3k blocks: no addition around them
  EXPECT_FALSE(Prunable(*y11, "model.6.m.0.cv1"));       // C3k's own shortcut chain
  EXPECT_TRUE(Prunable(*y11, "model.6.m.0.cv2"));
  EXPECT_TRUE(Prunable(*y11, "model.6.m.0.m.0.cv1"));
  EXPECT_FALSE(Prunable(*y11, "model.10.cv1"));          // C2PSA's fixed split
  EXPECT_FALSE(Prunable(*y11, "model.10.m.0.attn.qkv"));
  EXPECT_FALSE(Prunable(*y11, "model.10.m.0.ffn.1"));
  EXPECT_TRUE(Prunable(*y11, "model.10.m.0.ffn.0"));     // the feed-forward's hidden channels
  EXPECT_TRUE(Prunable(*y11, "model.10.cv2"));
  EXPECT_FALSE(Prunable(*y11, "model.23.cv3.0.0.0"));    // depthwise: follows its input
  EXPECT_TRUE(Prunable(*y11, "model.23.cv3.0.0.1"));
}

// After a real backward: AddSparsityGradient adds S * sign(gamma) to each prunable gamma's gradient and
// leaves every other gradient as it was, bit for bit.
TEST(Sparsity, AddsSTimesSignGammaToPrunableGradientsOnly) {
  at::manual_seed(0);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 4));
  {
    c10::NoGradGuard no_grad;  // mixed signs, so that sign(gamma) is not always 1
    for (auto& p : model->named_parameters()) {
      if (p.key().find(".bn.weight") != std::string::npos) p.value().uniform_(-1, 1);
    }
  }
  model->train();
  DetectOutput out = model->forward(at::rand({2, 3, 64, 64}));
  at::Tensor loss = at::zeros({});
  for (const at::Tensor& f : out.feats) loss = loss + f.square().mean();
  loss.backward();
  std::map<std::string, at::Tensor> before;
  for (const auto& p : model->named_parameters()) {
    if (p.value().grad().defined()) before[p.key()] = p.value().grad().clone();
  }
  const double s = 0.25;
  const std::vector<std::string> names = SparsityTargetNames(*model);
  const std::set<std::string> penalised(names.begin(), names.end());
  AddSparsityGradient(SparsityTargets(*model), s);
  int checked_penalised = 0, checked_exempt_bn = 0;
  for (const auto& p : model->named_parameters()) {
    if (!p.value().grad().defined()) continue;
    const at::Tensor& g = p.value().grad();
    if (penalised.count(p.key()) != 0) {
      const at::Tensor expected = before[p.key()] + s * p.value().detach().sign();
      EXPECT_TRUE(at::allclose(g, expected, 0, 1e-6)) << p.key();
      ++checked_penalised;
    } else {
      EXPECT_TRUE(at::equal(g, before[p.key()])) << p.key() << " changed";
      if (p.key().find(".bn.weight") != std::string::npos) ++checked_exempt_bn;
    }
  }
  EXPECT_GT(checked_penalised, 40);
  EXPECT_GT(checked_exempt_bn, 5);  // model.{2,4,6,8}.cv1 and their Bottlenecks' cv2
}

struct GammaMeans {
  double penalised = 0, exempt = 0;
};

// A few SGD steps (momentum 0.01, lr 0.1) through the training stack's own TrainStep on CPU, with
// set_sparsity(s) as the run sets it; the mean |gamma| of the penalised and of the exempt BatchNorms after.
GammaMeans TrainSteps(double s, int steps) {
  TrainOptions o;
  o.device = "cpu";
  o.batch = 2;
  o.nbs = 2;  // a step per batch
  o.optimizer = "SGD";
  o.lr0 = 0.1;
  o.momentum = 0.01;  // SGD here is Nesterov's, which needs some; 0.01 leaves the step ~ lr * gradient
  o.amp = AmpMode::kOff;
  TrainingStack stack;
  stack.target = PrepareDevice(o, at::Device(at::kCPU)).value();
  at::manual_seed(0);
  stack.model = NewModel(ModelName{}, 3, stack.target);
  stack.model->train();
  EXPECT_TRUE(BuildStackOptimizer(&stack, o, 3, 1000).ok());
  EXPECT_TRUE(BuildStep(&stack, o, 3).ok());
  stack.step->set_sparsity(s, SparsityTargets(*stack.model));
  const at::Tensor labels = at::tensor({0.f, 1.f, 0.5f, 0.5f, 0.3f, 0.4f, 1.f, 2.f, 0.4f, 0.6f, 0.2f, 0.2f}).view({2, 6});
  for (int i = 0; i < steps; ++i) {
    EXPECT_TRUE(stack.step->ForwardBackward(at::rand({2, 3, 64, 64}), labels, 1, true).ok());
    EXPECT_TRUE(stack.step->OptimizerStep().ok());
  }
  const std::vector<std::string> names = SparsityTargetNames(*stack.model);
  const std::set<std::string> penalised(names.begin(), names.end());
  GammaMeans m;
  int64_t np = 0, ne = 0;
  for (const auto& p : stack.model->named_parameters()) {
    if (p.key().find(".bn.weight") == std::string::npos) continue;
    const double sum = p.value().detach().abs().sum().item<double>();
    if (penalised.count(p.key()) != 0) {
      m.penalised += sum;
      np += p.value().numel();
    } else {
      m.exempt += sum;
      ne += p.value().numel();
    }
  }
  m.penalised /= static_cast<double>(np);
  m.exempt /= static_cast<double>(ne);
  return m;
}

// Eight steps at S = 1 move each penalised gamma by lr * S = 0.1 per step toward zero (from 1.0); without
// the term, and for the exempt BatchNorms, the scales stay near their init.
TEST(Sparsity, LargeSparsityDrivesThePenalisedScalesTowardZero) {
  const GammaMeans plain = TrainSteps(0.0, 8);
  const GammaMeans sparse = TrainSteps(1.0, 8);
  EXPECT_GT(plain.penalised, 0.85);
  EXPECT_LT(sparse.penalised, 0.35);
  EXPECT_GT(sparse.exempt, 0.85);
  EXPECT_NEAR(sparse.exempt, plain.exempt, 0.02);
}

// --sparsity (and the forks' sr=) reach args.yaml's `sr`; absent, args.yaml has no such key; a negative
// value is a usage error.
TEST(Sparsity, CliRecordsSrInArgsYamlAndRefusesNegativeValues) {
  TempDir tmp;
  testutil::MakeSynthCache(tmp.path(), testutil::Images(2, 1));
  const std::string cache = (tmp.path() / "cache").string();
  CliRun r = testing::YolocacheTrain(tmp, {"train", "--data", cache, "--sparsity", "0.001", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nsr: 0.001\n"), std::string::npos) << r.out;
  r = testing::YolocacheTrain(tmp, {"train", "data=" + cache, "sr=0.002", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nsr: 0.002\n"), std::string::npos) << r.out;
  r = testing::YolocacheTrain(tmp, {"train", "--data", cache, "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\nsr:"), std::string::npos) << r.out;
  r = testing::YolocacheTrain(tmp, {"train", "--data", cache, "--sparsity", "-1", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--sparsity"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace yc::trainer
