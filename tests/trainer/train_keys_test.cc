// Ultralytics' time=, multi_scale= and freeze=[list] in training: their pieces (TimeBudget, the multi-scale
// size and resize, the freeze text and names, args.yaml), then one short CPU run with all of them and
// optimizer=NAdam, interrupted and resumed: the time budget stops it early and cleanly (results.csv,
// last.pt, best.pt agree), the listed layers stay as they started, their BatchNorm statistics too.
#include <atomic>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/config/args_yaml.h"
#include "trainer/engine/lr_schedule.h"
#include "trainer/engine/multi_scale.h"
#include "trainer/engine/results_log.h"
#include "trainer/engine/time_budget.h"
#include "trainer/engine/trainer.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(TimeBudget, EpochsFromTheMeanEpochTime) {
  const auto t0 = TimeBudget::Clock::now();
  TimeBudget b(0.01);  // 36 s
  b.Start(t0);
  EXPECT_TRUE(b.enabled());
  EXPECT_FALSE(b.Exceeded(t0 + std::chrono::seconds(36)));  // "greater than", as Ultralytics compares
  EXPECT_TRUE(b.Exceeded(t0 + std::chrono::milliseconds(36001)));
  EXPECT_EQ(b.Epochs(1, t0 + std::chrono::seconds(5)), 8);    // ceil(36 / 5)
  EXPECT_EQ(b.Epochs(3, t0 + std::chrono::seconds(12)), 9);   // ceil(36 / 4)
  EXPECT_EQ(b.Epochs(2, t0 + std::chrono::seconds(100)), 1);  // never below one
  EXPECT_FALSE(TimeBudget(0).enabled());
  EXPECT_FALSE(TimeBudget(0).Exceeded());
}

TEST(LrSchedule, FollowsARecomputedEpochCount) {
  LrScheduleOptions lo;
  lo.epochs = 100;
  lo.lrf = 0.01;
  LrSchedule s(lo);
  const double before = s.Factor(2);
  s.set_epochs(4);
  EXPECT_DOUBLE_EQ(s.Factor(2), (1 - 2.0 / 4) * (1 - 0.01) + 0.01);
  EXPECT_LT(s.Factor(2), before);
}

TEST(MultiScale, SizesAreUltralyticsRangeOfStrideMultiples) {
  // imgsz 640: randrange(320, 992) // 32 * 32 = 320 .. 960, every multiple of 32 there.
  std::set<int64_t> seen;
  for (int64_t ni = 0; ni < 4000; ++ni) {
    const int64_t sz = MultiScaleSize(640, 32, 0, ni);
    ASSERT_EQ(sz % 32, 0);
    seen.insert(sz);
  }
  EXPECT_EQ(*seen.begin(), 320);
  EXPECT_EQ(*seen.rbegin(), 960);
  EXPECT_EQ(seen.size(), 21u);
  // A function of (seed, iteration) alone.
  EXPECT_EQ(MultiScaleSize(640, 32, 7, 123), MultiScaleSize(640, 32, 7, 123));
  int differ = 0;
  for (int64_t ni = 0; ni < 50; ++ni) differ += MultiScaleSize(640, 32, 7, ni) != MultiScaleSize(640, 32, 8, ni);
  EXPECT_GT(differ, 25);
  // imgsz 32: Ultralytics' range starts at 16 (size 0); never below the stride here.
  for (int64_t ni = 0; ni < 200; ++ni) EXPECT_GE(MultiScaleSize(32, 32, 0, ni), 32);
}

TEST(MultiScale, ResizesAsInterpolateBilinear) {
  const at::Tensor images = at::rand({2, 3, 64, 64});
  EXPECT_TRUE(MultiScaleImages(images, 64, 32).is_same(images));  // sf == 1: untouched
  const at::Tensor up = MultiScaleImages(images, 96, 32);
  EXPECT_EQ(up.sizes(), (at::IntArrayRef{2, 3, 96, 96}));
  // F.interpolate(size=..., mode='bilinear', align_corners=False) at the corner pixel of a 1.5x upscale:
  // source coordinate (0 + 0.5) / 1.5 - 0.5 < 0 clamps to pixel 0.
  EXPECT_FLOAT_EQ(up[0][0][0][0].item<float>(), images[0][0][0][0].item<float>());
  // A non-square batch keeps its aspect, each side rounded up to the stride: 64x96 at 128 -> 96x128.
  const at::Tensor wide = MultiScaleImages(at::rand({1, 3, 64, 96}), 128, 32);
  EXPECT_EQ(wide.sizes(), (at::IntArrayRef{1, 3, 96, 128}));
  const at::Tensor nhwc = MultiScaleImages(images.contiguous(at::MemoryFormat::ChannelsLast), 32, 32);
  EXPECT_TRUE(nhwc.is_contiguous(at::MemoryFormat::ChannelsLast));
}

TEST(Freeze, CountOrListAsUltralytics) {
  TrainOptions o;
  ASSERT_TRUE(SetFreeze("3", &o).ok());
  EXPECT_EQ(FrozenLayers(o), (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(SetFreeze("[0, 3,5]", &o).ok());
  EXPECT_EQ(o.freeze, 0);
  EXPECT_EQ(FrozenLayers(o), (std::vector<int>{0, 3, 5}));
  ASSERT_TRUE(SetFreeze("[4]", &o).ok());  // a one-item list is a list
  EXPECT_EQ(FrozenLayers(o), (std::vector<int>{4}));
  for (const char* bad : {"", "x", "[1,-2]", "1.5", "[0,a]"}) {
    TrainOptions b;
    const Status st = SetFreeze(bad, &b);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find(std::string("'") + bad + "'"), std::string::npos) << st.ToString();
  }
  EXPECT_TRUE(IsFrozenName("model.3.cv1.bn.weight", {0, 3}));
  EXPECT_FALSE(IsFrozenName("model.13.cv1.bn.weight", {0, 3}));  // "model.3." is not in it
  EXPECT_FALSE(IsFrozenName("model.30.weight", {3}));
  EXPECT_TRUE(IsFrozenName("model.22.dfl.conv.weight", {}));
  // Round trip through the checkpoint's JSON; args.yaml writes the list in PyYAML's block style.
  o.data = "d.yc";
  Result<TrainOptions> back = TrainOptionsFromJson(ToJson(o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->freeze_layers, (std::vector<int>{4}));
  ASSERT_TRUE(SetFreeze("0,3", &o).ok());
  EXPECT_NE(ArgsYaml(o, "").find("\nfreeze:\n- 0\n- 3\nmulti_scale: false\n"), std::string::npos) << ArgsYaml(o, "");
  ASSERT_TRUE(SetFreeze("10", &o).ok());
  EXPECT_NE(ArgsYaml(o, "").find("\nfreeze: 10\n"), std::string::npos);
}

TEST(Validate, TimeAndOptimizerNames) {
  TrainOptions o;
  o.data = "d.yc";
  o.time = -1;
  EXPECT_NE(ValidateTrainOptions(o).message().find("--time"), std::string::npos);
  o.time = 0.5;
  o.optimizer = "radam";
  EXPECT_TRUE(ValidateTrainOptions(o).ok()) << ValidateTrainOptions(o).ToString();
  o.optimizer = "Lion";
  const Status st = ValidateTrainOptions(o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'Lion'"), std::string::npos) << st.ToString();
  o.optimizer = "auto";
  o.freeze = 2;
  o.freeze_layers = {1};
  EXPECT_FALSE(ValidateTrainOptions(o).ok());
}

// Cancels at batch `batch` of epoch 1, as Ctrl-C would.
class StopAtBatch final : public TrainObserver {
 public:
  StopAtBatch(std::atomic<bool>* flag, size_t batch) : flag_(flag), batch_(batch) {}
  void OnTrainProgress(const BatchProgress& p) override {
    if (p.epoch == 1 && p.batch == batch_) flag_->store(true);
  }

 private:
  std::atomic<bool>* flag_;
  size_t batch_;
};

// A section's tensors by name (the checkpoint's model or EMA).
std::map<std::string, at::Tensor> Section(const fs::path& ckpt, const std::string& section) {
  auto reader = CheckpointReader::Open(ckpt, at::Device(at::kCPU));
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  auto model = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  EXPECT_TRUE(model.ok());
  EXPECT_TRUE((*reader)->LoadModule(section, **model).ok());
  std::map<std::string, at::Tensor> out;
  for (const auto& p : (*model)->named_parameters(true)) out[p.key()] = p.value().detach().to(at::kFloat).clone();
  for (const auto& b : (*model)->named_buffers(true)) out[b.key()] = b.value().to(at::kFloat).clone();
  return out;
}

std::string ReadText(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TimedRun, StopsOnTimeCleanlyAndResumes) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp / "synth", testutil::Images(12, 4));
  TrainOptions o = testutil::TinyRun(cache, tmp / "run");
  o.epochs = 50;  // overridden by time
  o.time = 0.0004;  // 1.44 s
  o.optimizer = "NAdam";
  o.multi_scale = true;
  o.freeze_layers = {0, 2};
  o.plots = false;
  std::atomic<bool> cancel{false};
  StopAtBatch stopper(&cancel, 1);
  Result<TrainSummary> first = Train(o, TrainHooks{&stopper, &cancel, {}, {}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->interrupted);
  const fs::path last = tmp / "run" / "weights" / "last.pt";
  const auto start = Section(last, "model");  // the weights after one step, before the resume
  Result<TrainOptions> ro = ResumeOptions(last);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_DOUBLE_EQ(ro->time, 0.0004);
  EXPECT_EQ(ro->freeze_layers, (std::vector<int>{0, 2}));
  EXPECT_TRUE(ro->multi_scale);
  cancel = false;
  Result<TrainSummary> s = Train(*ro, TrainHooks{nullptr, &cancel, last, {}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->interrupted);
  EXPECT_FALSE(s->early_stopped);

  // Stopped by the budget long before 50 epochs; every file tells the same story.
  Result<std::vector<EpochRecord>> rows = ReadResultsCsv(tmp / "run" / "results.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_GE(rows->size(), 1u);
  EXPECT_LT(rows->size(), 50u);
  EXPECT_EQ(static_cast<int>(rows->size()), s->epochs_completed);
  EXPECT_TRUE(rows->back().validated);  // a timed stop validates its (partial) last epoch
  auto reader = CheckpointReader::Open(last, at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->meta().kind, kCheckpointKindRelease);  // a finished run's last.pt is stripped
  EXPECT_FALSE((*reader)->has_optimizer());
  EXPECT_EQ((*reader)->meta().state.epoch, s->epochs_completed);
  EXPECT_LT((*reader)->meta().options.epochs, 50);  // the recomputed count
  EXPECT_TRUE(fs::exists(tmp / "run" / "weights" / "best.pt"));
  const std::string yaml = ReadText(tmp / "run" / "args.yaml");
  for (const char* line : {"\ntime: 0.0004\n", "\noptimizer: NAdam\n", "\nfreeze:\n- 0\n- 2\n", "\nmulti_scale: true\n"}) {
    EXPECT_NE(yaml.find(line), std::string::npos) << line << " in\n" << yaml;
  }

  // Frozen: model.0 and model.2 kept their weights and their BatchNorm statistics; model.1 trained.
  const auto end = Section(last, "model");  // the release form holds the EMA
  for (const auto& [name, t] : start) {
    if (name.find("num_batches_tracked") != std::string::npos) continue;
    const double diff = (end.at(name) - t).abs().max().item<double>();
    const bool frozen = IsFrozenName(name, {0, 2});
    if (frozen) {
      EXPECT_LT(diff, 2e-3 * std::max(1.0, t.abs().max().item<double>())) << name;  // fp16 rounding only
    }
    if (name == "model.1.conv.weight" || name == "model.1.bn.running_mean") {
      EXPECT_GT(diff, 1e-3) << name;
    }
  }
}

}  // namespace
}  // namespace yc::trainer
