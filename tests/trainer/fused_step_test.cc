#include "trainer/engine/fused_step.h"

#include <memory>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "trainer/engine/optimizer.h"

namespace yc::trainer {
namespace {

// A small conv net whose parameters split into the trainer's three groups.
torch::nn::Sequential TinyNet() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).bias(false)),
                               torch::nn::BatchNorm2d(8), torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 4, 1)));
}

std::vector<at::Device> Devices() {
  std::vector<at::Device> d{at::Device(at::kCPU)};
  if (torch::cuda::is_available()) d.emplace_back(at::kCUDA, 0);
  return d;
}

// Gradients of step k: the same on both models (a fixed function of the step and the parameter shape).
void SetGrads(torch::nn::Module& m, int k, const at::Device& device) {
  int i = 0;
  for (auto& p : m.parameters()) {
    auto gen = at::detail::createCPUGenerator(100 * k + i++);
    p.mutable_grad() = at::randn(p.sizes(), gen).to(device);
  }
}

void ExpectSameParameters(torch::nn::Module& a, torch::nn::Module& b, double tol) {
  auto pa = a.parameters();
  auto pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_LT((pa[i] - pb[i]).abs().max().item<double>(), tol) << "parameter " << i;
  }
}

// Two identical TinyNets on `device`, each with the optimizer `name` builds for it.
struct TwinNets {
  torch::nn::Sequential a = TinyNet(), b = TinyNet();
  std::unique_ptr<torch::optim::Optimizer> a_opt, b_opt;
  TwinNets(const std::string& name, const at::Device& device) {
    a->to(device);
    b->to(device);
    OptimizerSpec spec = ResolveOptimizer(name, 0.01, 0.9, 0.1, 80, 0).value();
    a_opt = BuildOptimizer(*a, spec, 5e-2);
    b_opt = BuildOptimizer(*b, spec, 5e-2);
  }
};

// Runs `steps` steps with lr/momentum changed each step (as warmup does) on the reference optimizer and on
// FusedStep over an identical copy; the parameters must agree.
void CompareWithReference(const std::string& name, const at::Device& device) {
  TwinNets twins(name, device);
  auto& ref_net = twins.a;
  auto& fused_net = twins.b;
  auto& ref = twins.a_opt;
  auto& opt = twins.b_opt;
  ASSERT_TRUE(FusedStep::Supported(*opt));
  FusedStep fused(*opt);
  for (int k = 0; k < 5; ++k) {
    for (size_t g = 0; g < 3; ++g) {
      SetLearningRate(*ref, g, 0.01 * (k + 1));
      SetLearningRate(*opt, g, 0.01 * (k + 1));
      SetMomentum(*ref, g, 0.8 + 0.02 * k);
      SetMomentum(*opt, g, 0.8 + 0.02 * k);
    }
    SetGrads(*ref_net, k, device);
    SetGrads(*fused_net, k, device);
    ref->step();
    fused.Step(at::Tensor());
  }
  ExpectSameParameters(*ref_net, *fused_net, 1e-5);
}

TEST(FusedStep, MatchesTorchOptim) {
  auto probe = TinyNet();
  if (!FusedStep::Supported(*BuildOptimizer(*probe, ResolveOptimizer("SGD", 0.01, 0.9, 0.1, 80, 0).value(), 0))) {
    GTEST_SKIP() << "this LibTorch has no fused optimizer kernels (they arrived in 2.4); the trainer uses torch::optim";
  }
  for (const auto& device : Devices()) {
    for (const char* name : {"SGD", "Adam", "AdamW"}) {
      SCOPED_TRACE(std::string(name) + " on " + device.str());
      CompareWithReference(name, device);
    }
  }
}

TEST(FusedStep, SkipsOnFoundInfAndKeepsStepCounts) {
  auto net = TinyNet();
  auto opt = BuildOptimizer(*net, ResolveOptimizer("AdamW", 0.01, 0.9, 0.1, 80, 0).value(), 5e-2);
  if (!FusedStep::Supported(*opt)) GTEST_SKIP() << "this LibTorch has no fused optimizer kernels (2.4+)";
  FusedStep fused(*opt);
  const at::Device cpu(at::kCPU);
  SetGrads(*net, 0, cpu);
  fused.Step(at::zeros({1}));
  std::vector<at::Tensor> before;
  for (auto& p : net->parameters()) before.push_back(p.detach().clone());
  SetGrads(*net, 1, cpu);
  fused.Step(at::ones({1}));  // overflowed step: nothing moves
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].equal(before[i])) << "parameter " << i;
  fused.SyncState();
  ASSERT_FALSE(opt->state().empty());
  for (auto& entry : opt->state()) {
    EXPECT_EQ(static_cast<torch::optim::AdamWParamState&>(*entry.second).step(), 1);  // the skip is not counted
  }
  fused.Step(at::zeros({1}));
  fused.SyncState();
  for (auto& entry : opt->state()) EXPECT_EQ(static_cast<torch::optim::AdamWParamState&>(*entry.second).step(), 2);
}

// A captured step reads each group's lr from a device scalar (graphed_step.h): the same steps as with the
// lr option, on every device the kernels run on.
TEST(FusedStep, DeviceLearningRatesStepAsTheOptionDoes) {
  auto probe = TinyNet();
  if (!FusedStep::Supported(*BuildOptimizer(*probe, ResolveOptimizer("SGD", 0.01, 0.9, 0.1, 80, 0).value(), 0))) {
    GTEST_SKIP() << "this LibTorch has no fused optimizer kernels (2.4+)";
  }
  for (const auto& device : Devices()) {
    for (const char* name : {"SGD", "AdamW"}) {
      SCOPED_TRACE(std::string(name) + " on " + device.str());
      TwinNets twins(name, device);
      auto& a_net = twins.a;
      auto& b_net = twins.b;
      auto& a_opt = twins.a_opt;
      auto& b_opt = twins.b_opt;
      FusedStep a(*a_opt);
      FusedStep b(*b_opt);
      std::vector<at::Tensor> lrs;
      for (size_t g = 0; g < 3; ++g) lrs.push_back(at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device)));
      for (int k = 0; k < 4; ++k) {
        for (size_t g = 0; g < 3; ++g) {
          const double lr = 0.01 * (k + 1) + 0.001 * static_cast<double>(g);
          SetLearningRate(*a_opt, g, lr);
          lrs[g].fill_(lr);
        }
        SetGrads(*a_net, k, device);
        SetGrads(*b_net, k, device);
        a.Step(at::Tensor());
        b.Step(at::Tensor(), &lrs);
      }
      ExpectSameParameters(*a_net, *b_net, 1e-6);
    }
  }
}

}  // namespace
}  // namespace yc::trainer
