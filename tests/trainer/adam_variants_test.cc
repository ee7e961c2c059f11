// NAdam, RAdam and Adamax (trainer/engine/adam_variants.h) against torch.optim's own (Debian's python3-torch,
// tests/trainer/fixtures/torch_optimizers.py; skipped with a message where it is absent) on the same
// parameters and gradients, set up as Ultralytics' build_optimizer does; and their state through a
// capture/restore in the middle of the run (what a checkpoint and --resume do) changes nothing.
#include "trainer/engine/adam_variants.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/test_support.h"
#include "trainer/engine/optimizer.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr double kLr = 0.01, kMomentum = 0.937, kDecay = 0.05;
constexpr int kSteps = 8;  // RAdam's rectified branch starts at step 6 with beta2 0.999

bool HavePythonTorch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

// Conv2d(3, 8, 3, bias=False), BatchNorm2d(8), Conv2d(8, 4, 1): all three parameter groups.
torch::nn::Sequential TinyNet() {
  torch::manual_seed(7);
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).bias(false)),
                               torch::nn::BatchNorm2d(8), torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 4, 1)));
}

at::Tensor StepGrad(const at::Tensor& p, int step, int index) {
  auto gen = at::detail::createCPUGenerator(1000 * step + index);
  return at::randn(p.sizes(), gen);
}

std::unique_ptr<torch::optim::Optimizer> Build(torch::nn::Module& net, OptimizerKind kind) {
  OptimizerSpec spec;
  spec.kind = kind;
  spec.lr = kLr;
  spec.momentum = kMomentum;
  return BuildOptimizer(net, spec, kDecay);
}

void RunSteps(torch::nn::Module& net, torch::optim::Optimizer& opt, int from, int to) {
  for (int k = from; k < to; ++k) {
    int i = 0;
    for (auto& p : net.parameters()) p.mutable_grad() = StepGrad(p, k, i++);
    opt.step();
  }
}

// Parameters, then per parameter exp_avg, the second state and mu_product (0 without): the fixture's layout.
at::Tensor Flatten(torch::nn::Module& net, torch::optim::Optimizer& opt) {
  std::vector<at::Tensor> out;
  for (auto& p : net.parameters()) out.push_back(p.detach().flatten());
  for (auto& p : net.parameters()) {
    auto& s = static_cast<AdamVariantParamState&>(*opt.state().at(OptimizerStateKey(p)));
    out.push_back(s.exp_avg().flatten());
    out.push_back((s.exp_inf().defined() ? s.exp_inf() : s.exp_avg_sq()).flatten());
    out.push_back(s.mu_product().defined() ? s.mu_product().view({1}) : at::zeros({1}));
  }
  return at::cat(out);
}

void WriteFloats(const fs::path& path, const std::vector<at::Tensor>& tensors) {
  std::ofstream f(path, std::ios::binary);
  for (const auto& t : tensors) {
    const at::Tensor c = t.contiguous().to(at::kFloat);
    f.write(reinterpret_cast<const char*>(c.data_ptr<float>()), static_cast<std::streamsize>(c.numel() * sizeof(float)));
  }
}

at::Tensor ReadFloats(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size() / sizeof(float))}, at::kFloat);
  std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
  return t;
}

constexpr OptimizerKind kKinds[] = {OptimizerKind::kNAdam, OptimizerKind::kRAdam, OptimizerKind::kAdamax};

// torch.optim's figures for every kind, from the net's initial parameters (one python3 start for all).
std::map<std::string, at::Tensor> Reference(torch::nn::Module& net, const TempDir& tmp) {
  std::vector<at::Tensor> in;
  for (auto& p : net.parameters()) in.push_back(p.detach());
  for (int k = 0; k < kSteps; ++k) {
    int i = 0;
    for (auto& p : net.parameters()) in.push_back(StepGrad(p, k, i++));
  }
  WriteFloats(tmp / "in.f32", in);
  std::string kinds;
  for (OptimizerKind kind : kKinds) kinds += (kinds.empty() ? "" : ",") + std::string(OptimizerName(kind));
  const std::string cmd = "/usr/bin/python3 '" + std::string(YOLOCACHE_SOURCE_DIR) +
                          "/tests/trainer/fixtures/torch_optimizers.py' " + kinds + " " + std::to_string(kLr) + " " +
                          std::to_string(kMomentum) + " " + std::to_string(kDecay) + " " + std::to_string(kSteps) +
                          " '" + (tmp / "in.f32").string() + "' '" + (tmp / "out").string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::map<std::string, at::Tensor> out;
  for (OptimizerKind kind : kKinds) {
    const std::string name = OptimizerName(kind);
    out[name] = ReadFloats(tmp / ("out." + name + ".f32"));
  }
  return out;
}

TEST(AdamVariant, MatchesTorchOptim) {
  if (!HavePythonTorch()) GTEST_SKIP() << "/usr/bin/python3 with torch is absent";
  TempDir tmp;
  auto init = TinyNet();
  const std::map<std::string, at::Tensor> expected = Reference(*init, tmp);
  int64_t n = 0;
  std::vector<at::Tensor> initial;
  for (auto& p : init->parameters()) {
    n += p.numel();
    initial.push_back(p.detach().flatten());
  }
  for (OptimizerKind kind : kKinds) {
    SCOPED_TRACE(OptimizerName(kind));
    auto net = TinyNet();
    auto opt = Build(*net, kind);
    RunSteps(*net, *opt, 0, kSteps);
    const at::Tensor got = Flatten(*net, *opt);
    const at::Tensor& want = expected.at(OptimizerName(kind));
    ASSERT_EQ(got.numel(), want.numel());
    EXPECT_LT((got - want).abs().max().item<double>(), 2e-6);
    // The parameters moved (a wrong rule cannot pass as a no-op).
    EXPECT_GT((got.narrow(0, 0, n) - at::cat(initial)).abs().max().item<double>(), 1e-3);
  }
}

class AdamVariantTest : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(AdamVariantTest, StateRoundTripContinuesExactly) {
  const OptimizerKind kind = GetParam();
  auto straight = TinyNet();
  auto opt = Build(*straight, kind);
  RunSteps(*straight, *opt, 0, kSteps);

  auto first = TinyNet();
  auto opt1 = Build(*first, kind);
  RunSteps(*first, *opt1, 0, kSteps / 2);
  Result<SavedOptimizer> saved = CaptureOptimizer(*opt1);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  auto second = TinyNet();
  {
    c10::NoGradGuard no_grad;
    auto a = first->parameters(), b = second->parameters();
    for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  }
  auto opt2 = Build(*second, kind);
  ASSERT_TRUE(RestoreOptimizer(*saved, *opt2).ok());
  RunSteps(*second, *opt2, kSteps / 2, kSteps);
  EXPECT_TRUE(at::equal(Flatten(*straight, *opt), Flatten(*second, *opt2))) << OptimizerName(kind);

  // A state without its kind's tensors is refused, naming it.
  SavedOptimizer broken = *saved;
  broken.groups[1].params[0]->tensors.erase("exp_avg");
  auto third = TinyNet();
  auto opt3 = Build(*third, kind);
  const Status st = RestoreOptimizer(broken, *opt3);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("exp_avg"), std::string::npos) << st.ToString();
}

INSTANTIATE_TEST_SUITE_P(Kinds, AdamVariantTest,
                         ::testing::Values(OptimizerKind::kNAdam, OptimizerKind::kRAdam, OptimizerKind::kAdamax),
                         [](const auto& info) { return std::string(OptimizerName(info.param)); });

TEST(AdamVariant, UltralyticsNamesResolveInAnyCase) {
  for (const char* name : {"nadam", "RAdam", "ADAMAX"}) {
    Result<OptimizerSpec> spec = ResolveOptimizer(name, 0.02, 0.9, 0.1, 80, 10);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_DOUBLE_EQ(spec->lr, 0.02);
  }
  EXPECT_EQ(ResolveOptimizer("nadam", 0.02, 0.9, 0.1, 80, 10)->kind, OptimizerKind::kNAdam);
  const Result<OptimizerSpec> bad = ResolveOptimizer("Nadamw", 0.02, 0.9, 0.1, 80, 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Nadamw"), std::string::npos);
  EXPECT_NE(bad.status().message().find("Adamax"), std::string::npos);
}

}  // namespace
}  // namespace yc::trainer
