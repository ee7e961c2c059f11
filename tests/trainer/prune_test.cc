// Channel pruning (trainer/model/prune/): the plan's choices and refusals, the exactness of removing
// channels that carry nothing (BatchNorm gamma and beta both zero), consistent shapes and a working forward
// after removing real channels, on both families, and a recorded architecture rebuilt from its widths.
#include <algorithm>
#include <cmath>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "trainer/model/prune/channel_widths.h"
#include "trainer/model/prune/model_cost.h"
#include "trainer/model/prune/prune_plan.h"
#include "trainer/model/prune/sparsity.h"

namespace yc::trainer {
namespace {

// Exactness tolerance: removing a channel whose BatchNorm output is exactly 0 (gamma = beta = 0; SiLU(0) =
// 0) removes only zero terms from each consumer's sums (and, behind YOLO11's depthwise convolutions, a
// constant their 1x1 Conv's BatchNorm absorbs), so the outputs may differ only by rounding of sums taken
// in another order (another channel count can pick another convolution kernel). The comparison runs in
// float64, where that rounding is far below the tolerance, so any real change of the function shows:
// |a - b| <= 1e-9 + 1e-9 * |a| on the decoded predictions (pixel boxes up to the input size, sigmoid scores).
constexpr double kAbsTol = 1e-9, kRelTol = 1e-9;

// A model whose BatchNorms look trained: running statistics away from 0/1, every prunable gamma in
// [0.5, 1.5]; then every third channel of each prunable output (both halves alike for a split cv1) gets
// gamma = beta = 0.
DetectionModel ModelWithDeadChannels(ModelFamily family, int64_t* dead) {
  at::manual_seed(1);
  DetectionModel model(ModelOptions(family, ModelScale::kN, 5));
  c10::NoGradGuard no_grad;
  for (auto& b : model->named_buffers()) {
    if (b.key().find("running_mean") != std::string::npos) b.value().uniform_(-0.5, 0.5);
    if (b.key().find("running_var") != std::string::npos) b.value().uniform_(0.5, 2.0);
  }
  for (auto& p : model->named_parameters()) {
    if (p.key().find(".bn.bias") != std::string::npos) p.value().uniform_(-0.2, 0.2);
  }
  *dead = 0;
  const auto params = model->named_parameters();
  for (const ConvNode& n : GraphOf(*model).convs) {
    if (!n.prunable) continue;
    at::Tensor gamma = *params.find(n.path + ".bn.weight");
    at::Tensor beta = *params.find(n.path + ".bn.bias");
    gamma.uniform_(0.5, 1.5);
    const int64_t span = n.halves ? n.out / 2 : n.out;
    for (int64_t k = 0; k < n.out; ++k) {
      if ((k % span) % 3 != 1) continue;
      gamma[k] = 0;
      beta[k] = 0;
      ++*dead;
    }
  }
  model->eval();
  return model;
}

std::map<std::string, std::vector<float>> Gammas(DetectionModelImpl& model, const ChannelGraph& g) {
  std::map<std::string, std::vector<float>> out;
  const auto params = model.named_parameters();
  for (const ConvNode& n : g.convs) {
    if (!n.prunable) continue;
    const at::Tensor t = params.find(n.path + ".bn.weight")->detach().contiguous();
    out[n.path].assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return out;
}

double WorstExcess(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs() - (kAbsTol + kRelTol * a.abs())).max().item<double>();
}

void ExpectDeadChannelsPruneExactly(ModelFamily family) {
  int64_t dead = 0;
  DetectionModel model = ModelWithDeadChannels(family, &dead);
  const ChannelGraph g = GraphOf(*model);
  Result<PrunePlan> plan = PlanPrune(g, Gammas(*model, g), PruneCriterion{0, 0.25, 0.1, 1});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  model->to(at::kDouble);
  at::manual_seed(2);
  const at::Tensor x = at::rand({2, 3, 96, 128}, at::kDouble);
  c10::NoGradGuard no_grad;
  const at::Tensor before = model->forward(x).pred.clone();
  const int64_t params_before = CountParameters(*model);

  EXPECT_EQ(plan->removed, dead);  // exactly the zero channels
  ApplyChannelKeep(*model, g, plan->keep);
  EXPECT_LT(CountParameters(*model), params_before);
  const at::Tensor after = model->forward(x).pred;
  ASSERT_EQ(after.sizes(), before.sizes());
  EXPECT_LE(WorstExcess(before, after), 0.0) << "max |diff| " << (before - after).abs().max().item<double>();
}

TEST(Prune, ZeroScaleChannelsRemoveExactlyYOLOv8) { ExpectDeadChannelsPruneExactly(ModelFamily::kV8); }
TEST(Prune, ZeroScaleChannelsRemoveExactlyYOLO11) { ExpectDeadChannelsPruneExactly(ModelFamily::k11); }

// Real channels (random scales, 40% removed globally): every tensor stays consistent, the forward runs in
// train and eval mode with the same output shapes, a clone (the EMA) works, GFLOPs and parameters drop, and
// the architecture rebuilt from the recorded widths has exactly the pruned model's tensor shapes.
void ExpectRealPruneConsistent(ModelFamily family) {
  at::manual_seed(3);
  DetectionModel model(ModelOptions(family, ModelScale::kN, 5));
  {
    c10::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      if (p.key().find(".bn.weight") != std::string::npos) p.value().uniform_(0, 1);
    }
  }
  const ModelCost before = MeasureModel(*model);
  const ChannelGraph g = GraphOf(*model);
  Result<PrunePlan> plan = PlanPrune(g, Gammas(*model, g), PruneCriterion{0.4, 0, 0.1, 1});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NEAR(static_cast<double>(plan->removed) / static_cast<double>(plan->prunable), 0.4, 0.05);
  ApplyChannelKeep(*model, g, plan->keep);
  const ModelCost after = MeasureModel(*model);
  EXPECT_LT(after.parameters, before.parameters * 0.8);
  EXPECT_LT(after.gflops, before.gflops * 0.8);
  EXPECT_EQ(after.layers.size(), before.layers.size());

  const at::Tensor x = at::rand({2, 3, 64, 96});
  model->train();
  DetectOutput t = model->forward(x);
  ASSERT_EQ(t.feats.size(), 3u);
  EXPECT_EQ(t.feats[0].size(1), model->detect().no());
  model->eval();
  c10::NoGradGuard no_grad;
  const at::Tensor pred = model->forward(x).pred;
  EXPECT_EQ(pred.size(1), 4 + 5);
  EXPECT_TRUE(at::isfinite(pred).all().item<bool>());
  auto copy = std::dynamic_pointer_cast<DetectionModelImpl>(model->clone());
  ASSERT_NE(copy, nullptr);
  copy->eval();
  EXPECT_TRUE(at::equal(copy->forward(x).pred, pred));

  ModelOptions recorded(family, ModelScale::kN, 5);
  for (const auto& [path, kept] : plan->keep) recorded.channels[path] = static_cast<int64_t>(kept.size());
  DetectionModel rebuilt(recorded);
  const auto a = model->named_parameters(), b = rebuilt->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) {
    ASSERT_NE(b.find(p.key()), nullptr) << p.key();
    EXPECT_EQ(p.value().sizes(), b.find(p.key())->sizes()) << p.key();
  }
  // The prunable BatchNorms of the rebuilt model are the ones sparsity training would penalise.
  EXPECT_EQ(SparsityTargetNames(*rebuilt), SparsityTargetNames(*model));
}

TEST(Prune, RealChannelsKeepShapesConsistentYOLOv8) { ExpectRealPruneConsistent(ModelFamily::kV8); }
TEST(Prune, RealChannelsKeepShapesConsistentYOLO11) { ExpectRealPruneConsistent(ModelFamily::k11); }

// C2f/C3k2 cv1 is chunked into two equal halves by Ultralytics' forward: the plan keeps equal counts.
TEST(Prune, SplitOutputsKeepEqualHalves) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 5));
  const ChannelGraph g = GraphOf(*model);
  std::map<std::string, std::vector<float>> gammas = Gammas(*model, g);
  std::vector<float>& cv1 = gammas.at("model.15.cv1");  // 64 channels: halves of 32
  std::fill(cv1.begin(), cv1.end(), 1.0f);
  for (int k = 0; k < 20; ++k) cv1[k] = 0.01f;  // 20 weak channels, all in the first half
  Result<PrunePlan> plan = PlanPrune(g, gammas, PruneCriterion{0, 0.1, 0.1, 1});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->keep.count("model.15.cv1"), 0u);  // the second half keeps 32, so the first does too
  for (int k = 32; k < 52; ++k) cv1[k] = 0.02f;     // now both halves have 20 weak channels
  plan = PlanPrune(g, gammas, PruneCriterion{0, 0.1, 0.1, 1});
  ASSERT_TRUE(plan.ok());
  const std::vector<int64_t>& kept = plan->keep.at("model.15.cv1");
  ASSERT_EQ(kept.size(), 24u);
  EXPECT_EQ(std::count_if(kept.begin(), kept.end(), [](int64_t k) { return k < 32; }), 12);
}

// The GFLOPs `prune` prints follow Ultralytics' convention: its BatchNorm-fused summaries report 8.7 for
// yolov8n and 6.5 for yolo11n (80 classes, 640 x 640); the attention matmuls we leave out are small.
TEST(Prune, GflopsMatchUltralyticsFusedSummaries) {
  DetectionModel v8(ModelOptions(ModelFamily::kV8, ModelScale::kN, 80));
  DetectionModel y11(ModelOptions(ModelFamily::k11, ModelScale::kN, 80));
  EXPECT_NEAR(MeasureModel(*v8).gflops, 8.7, 0.1);
  EXPECT_NEAR(MeasureModel(*y11).gflops, 6.5, 0.15);
  EXPECT_EQ(MeasureModel(*v8).parameters, 3157200);
}

TEST(Prune, RefusesBadCriteria) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 5));
  const ChannelGraph g = GraphOf(*model);
  const auto gammas = Gammas(*model, g);  // all 1.0 at init
  for (const PruneCriterion& c : {PruneCriterion{0, 0}, PruneCriterion{0.3, 0.1}, PruneCriterion{-0.1, 0},
                                  PruneCriterion{1.0, 0}, PruneCriterion{1.5, 0}, PruneCriterion{0, -1},
                                  PruneCriterion{0, 1.0}, PruneCriterion{0.3, 0, 0}, PruneCriterion{0.3, 0, 1.5},
                                  PruneCriterion{0.3, 0, 0.1, 0}, PruneCriterion{0.3, 0, 0.1, 8, 0.3},
                                  PruneCriterion{0, 0, 0.1, 8, 1.0},
                                  PruneCriterion{0, 0, 0.1, 8, 0.3}}) {  // valid, but a GFLOPs target is PruneModel's
    Result<PrunePlan> plan = PlanPrune(g, gammas, c);
    ASSERT_FALSE(plan.ok()) << c.ratio << " " << c.threshold << " " << c.min_keep;
    EXPECT_EQ(plan.status().code(), Status::Code::kInvalidArgument);
  }
  EXPECT_NE(PlanPrune(g, gammas, PruneCriterion{1.5, 0}).status().message().find("--ratio 1.5: must be in (0, 1)"),
            std::string::npos);
  EXPECT_NE(PlanPrune(g, gammas, PruneCriterion{0.3, 0, 0}).status().message().find("--min-keep 0: must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(PlanPrune(g, gammas, PruneCriterion{0.3, 0, 0.1, 0}).status().message().find("--multiple-of 0: must be >= 1"),
            std::string::npos);
  Result<PrunePlan> plan = PlanPrune(g, gammas, PruneCriterion{0, 0.99999});
  EXPECT_TRUE(plan.ok());  // 1.0 is not below the threshold: nothing removed
  EXPECT_EQ(plan->removed, 0);
}

// Equal scales: the global order is the graph's, so a ratio of 0.3 would empty model.0 first (its 16
// channels come first). The floor holds it at ceil(0.1 x 16) = 2 channels and the ratio takes the rest
// from the next outputs: exactly floor(0.3 x N) channels go, and no output drops below its floor (exact
// counts: --multiple-of 1).
TEST(Prune, AFloorKeepsEveryOutputAndTheRatioIsMetElsewhere) {
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 5));
  const ChannelGraph g = GraphOf(*model);
  const auto gammas = Gammas(*model, g);
  Result<PrunePlan> plan = PlanPrune(g, gammas, PruneCriterion{0.3, 0, 0.1, 1});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->removed, static_cast<int64_t>(std::floor(0.3 * static_cast<double>(plan->prunable))));
  ASSERT_EQ(plan->keep.count("model.0"), 1u);
  EXPECT_EQ(plan->keep.at("model.0"), (std::vector<int64_t>{14, 15}));  // the last two in graph order
  ASSERT_FALSE(plan->floored.empty());
  EXPECT_EQ(plan->floored.front(), "model.0");
  for (const ConvNode& n : g.convs) {
    if (plan->keep.count(n.path) == 0) continue;
    EXPECT_GE(static_cast<double>(plan->keep.at(n.path).size()), std::ceil(0.1 * static_cast<double>(n.out))) << n.path;
  }
  // A threshold above every scale leaves each output at its floor (min_keep 0.5: half of each).
  plan = PlanPrune(g, gammas, PruneCriterion{0, 0.999999, 0.5, 1});
  EXPECT_TRUE(plan.ok());
  EXPECT_EQ(plan->removed, 0);  // 1.0 is not below it
  std::map<std::string, std::vector<float>> low = gammas;
  for (auto& [path, v] : low) std::fill(v.begin(), v.end(), 0.001f);
  plan = PlanPrune(g, low, PruneCriterion{0, 0.01, 0.5, 1});
  ASSERT_TRUE(plan.ok());
  for (const ConvNode& n : g.convs) {
    if (!n.prunable || n.halves) continue;  // a split output keeps equal halves (SplitOutputsKeepEqualHalves)
    ASSERT_EQ(plan->keep.count(n.path), 1u) << n.path;
    EXPECT_EQ(static_cast<int64_t>(plan->keep.at(n.path).size()), (n.out + 1) / 2) << n.path;
  }
}

// The default plan rounds every kept count up to a multiple of 8 (each half of a split output): the exact
// plan's channels all stay, and the ones that come back are each output's largest removed scales. The
// rounded architecture builds and runs.
TEST(Prune, KeptCountsRoundUpToMultiplesOf8WithTheLargestRemovedScales) {
  at::manual_seed(5);
  DetectionModel model(ModelOptions(ModelFamily::k11, ModelScale::kN, 5));
  {
    c10::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      if (p.key().find(".bn.weight") != std::string::npos) p.value().uniform_(0, 1);
    }
  }
  const ChannelGraph g = GraphOf(*model);
  const auto gammas = Gammas(*model, g);
  Result<PrunePlan> exact = PlanPrune(g, gammas, PruneCriterion{0.4, 0, 0.1, 1});
  Result<PrunePlan> rounded = PlanPrune(g, gammas, PruneCriterion{0.4, 0});
  ASSERT_TRUE(exact.ok() && rounded.ok());
  EXPECT_LT(rounded->removed, exact->removed);
  EXPECT_EQ(rounded->kept_back - exact->kept_back, exact->removed - rounded->removed);
  int rounded_outputs = 0;
  for (const ConvNode& n : g.convs) {
    if (rounded->keep.count(n.path) == 0) continue;
    const std::vector<int64_t>& kept = rounded->keep.at(n.path);
    const int64_t per_part = n.halves ? static_cast<int64_t>(kept.size()) / 2 : static_cast<int64_t>(kept.size());
    EXPECT_EQ(per_part % 8, 0) << n.path << " keeps " << kept.size();
    ASSERT_EQ(exact->keep.count(n.path), 1u) << n.path;
    const std::vector<int64_t>& before = exact->keep.at(n.path);
    EXPECT_TRUE(std::includes(kept.begin(), kept.end(), before.begin(), before.end())) << n.path;
    if (n.halves || kept.size() == before.size()) continue;
    ++rounded_outputs;
    // Every channel that came back has a scale >= every channel still removed.
    const std::vector<float>& scale = gammas.at(n.path);
    float lowest_back = 2, highest_gone = -1;
    for (int64_t k = 0; k < n.out; ++k) {
      const bool now = std::binary_search(kept.begin(), kept.end(), k), then = std::binary_search(before.begin(), before.end(), k);
      if (now && !then) lowest_back = std::min(lowest_back, std::fabs(scale[k]));
      if (!now) highest_gone = std::max(highest_gone, std::fabs(scale[k]));
    }
    EXPECT_GE(lowest_back, highest_gone) << n.path;
  }
  EXPECT_GT(rounded_outputs, 0);
  ApplyChannelKeep(*model, g, rounded->keep);
  model->eval();
  c10::NoGradGuard no_grad;
  EXPECT_TRUE(at::isfinite(model->forward(at::rand({1, 3, 64, 64})).pred).all().item<bool>());
}

TEST(Prune, RecordedWidthsThatDoNotFitAreRefused) {
  ModelOptions o(ModelFamily::kV8, ModelScale::kN, 5);
  o.channels = {{"model.2.m.0.cv2", 8}};  // exempt: added to its input
  EXPECT_THROW(DetectionModel{o}, std::invalid_argument);
  o.channels = {{"model.12.cv1", 7}};  // a split output needs an even width
  EXPECT_THROW(DetectionModel{o}, std::invalid_argument);
  o.channels = {{"model.0", 17}};  // wider than built
  EXPECT_THROW(DetectionModel{o}, std::invalid_argument);
  o.channels = {{"model.0", 9}, {"model.12.cv1", 20}};
  DetectionModel ok(o);
  EXPECT_EQ(ok->named_parameters().find("model.1.conv.weight")->size(1), 9);
  EXPECT_EQ(ok->named_parameters().find("model.12.m.0.cv1.conv.weight")->size(1), 10);
}

}  // namespace
}  // namespace yc::trainer
