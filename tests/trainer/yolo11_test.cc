// YOLO11 beside YOLOv8: model names, parameter counts (constants, and Ultralytics' own figures when its
// source is beside the checkout), state_dict names and shapes equal to Ultralytics', eval forward equal
// to Ultralytics' on the same weights, a training step, and checkpoints that rebuild the right family.
#include <atomic>
#include <cmath>
#include <map>
#include <set>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/io/checkpoint.h"
#include "trainer/loss/loss.h"
#include "trainer/model/blocks_yolo11.h"
#include "trainer/model/detection_model.h"
#include "trainer/engine/trainer.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Ultralytics 8.3.166's figures at nc 80 (the yaml summaries; the fixture recomputes them below).
const std::map<std::string, int64_t> kParameterCounts = {
    {"yolov8n", 3157200},  {"yolov8s", 11166560}, {"yolov8m", 25902640}, {"yolov8l", 43691520},
    {"yolov8x", 68229648}, {"yolo11n", 2624080},  {"yolo11s", 9458752},  {"yolo11m", 20114688},
    {"yolo11l", 25372160}, {"yolo11x", 56966176}};

DetectionModel Build(const std::string& name, int64_t nc) {
  Result<ModelName> n = ParseModelName(name);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return DetectionModel(ModelOptions(*n, nc));
}

std::map<std::string, std::vector<int64_t>> Shapes(const DetectionModel& model) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& p : model->named_parameters()) out[p.key()] = p.value().sizes().vec();
  for (const auto& b : model->named_buffers()) out[b.key()] = b.value().sizes().vec();
  return out;
}

TEST(ModelFamilies, ParameterCountsEqualUltralytics) {
  for (const auto& [name, count] : kParameterCounts) {
    DetectionModel model = Build(name, 80);
    EXPECT_EQ(CountParameters(*model), count) << name;
    EXPECT_EQ(CountParameters(*model, /*trainable_only=*/true), count - 16) << name;  // the frozen DFL conv
  }
}

TEST(ModelFamilies, ParseModelName) {
  EXPECT_EQ(ParseModelName("yolo11n")->family, ModelFamily::k11);
  EXPECT_EQ(ParseModelName("YOLO11X")->scale, ModelScale::kX);
  EXPECT_EQ(ParseModelName("yolov8m")->family, ModelFamily::kV8);
  EXPECT_EQ(ParseModelName("yolov8m")->scale, ModelScale::kM);
  EXPECT_EQ(ParseModelName("s")->family, ModelFamily::kV8);  // old checkpoints and scripts
  EXPECT_EQ(ParseModelName("s")->scale, ModelScale::kS);
  for (const char* bad : {"", "yolo11", "yolov8", "yolo11q", "yolov5n", "yolo11nn", "q", "yolo11n.pt"}) {
    Result<ModelName> r = ParseModelName(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("yolo11n"), std::string::npos) << r.status().message();
  }
  for (const auto& [name, count] : kParameterCounts) EXPECT_EQ(ModelNameString(*ParseModelName(name)), name);
  EXPECT_EQ(ParseModelFamily("11").value(), ModelFamily::k11);
  EXPECT_EQ(ParseModelFamily("v8").value(), ModelFamily::kV8);
  EXPECT_FALSE(ParseModelFamily("v5").ok());
}

TEST(YOLO11, LayoutFollowsTheYaml) {
  DetectionModel n = Build("yolo11n", 80);
  ASSERT_EQ(n->model->size(), 24u);
  EXPECT_EQ(&n->detect(), n->model->ptr(23)->as<DetectImpl>());
  const auto shapes = Shapes(n);
  // C2PSA on P5 (256 channels at n): 2 heads of 64, key_dim 32 -> qkv 128 + 2 * 2 * 32 = 256 outputs.
  EXPECT_EQ(shapes.at("model.10.m.0.attn.qkv.conv.weight"), (std::vector<int64_t>{256, 128, 1, 1}));
  EXPECT_EQ(shapes.at("model.10.m.0.attn.pe.conv.weight"), (std::vector<int64_t>{128, 1, 3, 3}));  // depthwise
  EXPECT_EQ(shapes.at("model.10.m.0.ffn.1.conv.weight"), (std::vector<int64_t>{128, 256, 1, 1}));
  // n/s: C3k2's inner blocks are Bottlenecks with e 0.5 except where the yaml says c3k (layers 6, 8, 22).
  EXPECT_EQ(shapes.at("model.2.m.0.cv1.conv.weight"), (std::vector<int64_t>{8, 16, 3, 3}));
  EXPECT_TRUE(shapes.count("model.6.m.0.m.1.cv2.conv.weight"));
  EXPECT_FALSE(shapes.count("model.2.m.0.m.0.cv1.conv.weight"));
  // The head's depthwise class branch: cv3.i.0 = (DWConv, Conv 1x1), cv3.i.1 likewise, cv3.i.2 Conv2d.
  EXPECT_EQ(shapes.at("model.23.cv3.0.0.0.conv.weight"), (std::vector<int64_t>{64, 1, 3, 3}));
  EXPECT_EQ(shapes.at("model.23.cv3.0.0.1.conv.weight"), (std::vector<int64_t>{80, 64, 1, 1}));
  EXPECT_EQ(shapes.at("model.23.cv3.2.2.weight"), (std::vector<int64_t>{80, 80, 1, 1}));
  EXPECT_TRUE(shapes.count("model.23.dfl.conv.weight"));
  // m/l/x force c3k on in every C3k2.
  DetectionModel m = Build("yolo11m", 80);
  EXPECT_TRUE(Shapes(m).count("model.2.m.0.m.0.cv1.conv.weight"));
  // The head's bias init is the same as YOLOv8's.
  auto* cls = n->detect().cv3->ptr(0)->as<torch::nn::SequentialImpl>()->ptr(2)->as<torch::nn::Conv2dImpl>();
  EXPECT_NEAR(cls->bias[0].item<double>(), std::log(5.0 / 80 / std::pow(640.0 / 8, 2)), 1e-6);
  EXPECT_FALSE(n->detect().dfl->conv->weight.requires_grad());
}

TEST(YOLO11, TrainStepGivesAFiniteLossAndEveryGradient) {
  at::manual_seed(0);
  DetectionModel model = Build("yolo11n", 3);
  model->train();
  DetectionLoss loss(3, model->strides());
  auto images = at::rand({2, 3, 64, 64});
  auto labels = at::tensor({0.f, 0.f, .3f, .3f, .3f, .4f, 0.f, 2.f, .7f, .6f, .4f, .5f, 1.f, 1.f, .5f, .5f, .6f, .6f})
                    .view({3, 6});
  auto out = model->forward(images);
  ASSERT_EQ(out.feats.size(), 3u);
  EXPECT_EQ(out.feats[0].sizes(), (at::IntArrayRef{2, 64 + 3, 8, 8}));
  EXPECT_FALSE(out.pred.defined());
  auto l = loss(out.feats, labels, 2);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_TRUE(std::isfinite(l->total.item<double>()));
  EXPECT_GT(l->items[0].item<float>(), 0.0f);  // boxes were assigned anchors
  l->total.backward();
  int64_t trainable = 0, box_branch_with_grad = 0;
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) {
      EXPECT_NE(p.key().find(".dfl."), std::string::npos) << p.key();
      continue;
    }
    ++trainable;
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(at::isfinite(p.value().grad()).all().item<bool>()) << p.key();
    const bool nonzero = p.value().grad().abs().sum().item<double>() > 0.0;
    // A level's box branch (cv2.i) learns only from anchors assigned to a box on that level (the box and
    // DFL losses are foreground-only); at 64 px not every level gets one. Everything else must move.
    if (p.key().rfind("model.23.cv2.", 0) == 0) {
      box_branch_with_grad += nonzero;
    } else {
      EXPECT_TRUE(nonzero) << p.key();
    }
  }
  EXPECT_GT(trainable, 100);
  EXPECT_GT(box_branch_with_grad, 0);
  // Clone (the EMA's copy) is deep and gives the same eval outputs.
  model->eval();
  auto copy = std::dynamic_pointer_cast<DetectionModelImpl>(model->clone());
  ASSERT_TRUE(copy);
  c10::NoGradGuard no_grad;
  EXPECT_TRUE(at::allclose(model->forward(images).pred, copy->forward(images).pred, 1e-5, 1e-5));
  EXPECT_EQ(copy->family(), ModelFamily::k11);
}

TEST(YOLO11, ChannelsLastGivesTheSameOutputs) {
  at::manual_seed(1);
  DetectionModel model = Build("yolo11n", 4);
  model->eval();
  c10::NoGradGuard no_grad;
  auto x = at::rand({1, 3, 64, 96});
  auto a = model->forward(x).pred;
  ToChannelsLast(*model);
  auto b = model->forward(x.contiguous(at::MemoryFormat::ChannelsLast)).pred;
  EXPECT_TRUE(at::allclose(a, b, 1e-4, 1e-3));
}

// ---- against Ultralytics (skips without ../shared/ultralytics or python3-torch) ----

class AgainstUltralytics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixture_ = new testing::UltralyticsFixture(testing::UltralyticsFixture::Find());
    if (!fixture_->available) return;
    dir_ = new TempDir();
    // One python process for everything (importing torch + ultralytics dominates its time).
    rc_ = fixture_->Run("ultralytics_models.py",
                        {dir_->path().string(), "--counts", "yolo11n:80", "yolo11n:5", "yolo11s:80", "yolo11s:5",
                         "yolov8n:5"},
                        dir_->path());
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete fixture_;
    dir_ = nullptr;
    fixture_ = nullptr;
  }
  void SetUp() override {
    if (!fixture_->available) GTEST_SKIP() << fixture_->why;
    ASSERT_EQ(rc_, 0) << testing::ReadFile(dir_->path() / "python.log");
  }
  static nlohmann::json Json(const std::string& file) {
    auto j = nlohmann::json::parse(testing::ReadFile(dir_->path() / file), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << file;
    return j;
  }

  static testing::UltralyticsFixture* fixture_;
  static TempDir* dir_;
  static int rc_;
};
testing::UltralyticsFixture* AgainstUltralytics::fixture_ = nullptr;
TempDir* AgainstUltralytics::dir_ = nullptr;
int AgainstUltralytics::rc_ = -1;

TEST_F(AgainstUltralytics, ParameterCountsOfAllTenModels) {
  const nlohmann::json counts = Json("counts.json");
  for (const auto& [name, count] : kParameterCounts) {
    ASSERT_TRUE(counts.contains(name)) << name;
    EXPECT_EQ(counts[name].get<int64_t>(), count) << name << ": Ultralytics' figure differs from the constant";
  }
}

TEST_F(AgainstUltralytics, StateDictNamesAndShapes) {
  for (const char* spec : {"yolo11n_80", "yolo11n_5", "yolo11s_80", "yolo11s_5", "yolov8n_5"}) {
    const std::string s = spec;
    const std::string name = s.substr(0, s.find('_'));
    const int64_t nc = std::stoll(s.substr(s.find('_') + 1));
    const nlohmann::json ref = Json(s + ".json");
    DetectionModel model = Build(name, nc);
    std::map<std::string, std::vector<int64_t>> theirs;
    for (const auto& entry : ref["state_dict"]) theirs[entry[0].get<std::string>()] = entry[1].get<std::vector<int64_t>>();
    const auto ours = Shapes(model);
    EXPECT_EQ(ours.size(), theirs.size()) << s;
    for (const auto& [key, shape] : theirs) {
      auto it = ours.find(key);
      if (it == ours.end()) {
        ADD_FAILURE() << s << ": Ultralytics has " << key << ", we do not";
        continue;
      }
      EXPECT_EQ(it->second, shape) << s << " " << key;
    }
    for (const auto& [key, shape] : ours) EXPECT_TRUE(theirs.count(key)) << s << ": we have " << key << ", Ultralytics not";
    EXPECT_EQ(CountParameters(*model), ref["parameters"].get<int64_t>()) << s;
    EXPECT_EQ(CountParameters(*model, true), ref["trainable"].get<int64_t>()) << s;
  }
}

TEST_F(AgainstUltralytics, EvalForwardOnTheSameWeights) {
  for (const char* spec : {"yolo11n_80", "yolo11s_5", "yolov8n_5"}) {
    const std::string s = spec;
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    std::string error;
    ASSERT_TRUE(testing::ReadTensorFile(dir_->path() / (s + ".bin"), &tensors, &error)) << error;
    DetectionModel model = Build(s.substr(0, s.find('_')), std::stoll(s.substr(s.find('_') + 1)));
    std::map<std::string, at::Tensor> targets;
    for (auto& p : model->named_parameters()) targets[p.key()] = p.value();
    for (auto& b : model->named_buffers()) {
      if (b.key().find("num_batches_tracked") == std::string::npos) targets[b.key()] = b.value();
    }
    std::map<std::string, at::Tensor> special;
    size_t loaded = 0;
    {
      c10::NoGradGuard no_grad;
      for (auto& [name, t] : tensors) {
        if (name.rfind("__", 0) == 0) {
          special[name] = t;
          continue;
        }
        auto it = targets.find(name);
        ASSERT_NE(it, targets.end()) << s << ": no tensor named " << name;
        ASSERT_EQ(it->second.sizes(), t.sizes()) << s << " " << name;
        it->second.copy_(t);
        ++loaded;
      }
    }
    EXPECT_EQ(loaded, targets.size()) << s << ": some of our tensors were not in Ultralytics' state_dict";
    ASSERT_TRUE(special.count("__input__") && special.count("__output__"));
    model->eval();
    c10::NoGradGuard no_grad;
    DetectOutput out = model->forward(special["__input__"]);
    const at::Tensor& want = special["__output__"];
    ASSERT_EQ(out.pred.sizes(), want.sizes()) << s;
    // Relative to each element, with a floor for scores near 0: boxes are pixels, scores in (0, 1).
    auto err = ((out.pred - want).abs() / (want.abs() + 1e-2)).max().item<double>();
    EXPECT_LT(err, 1e-3) << s << ": decoded output differs from Ultralytics'";
    for (size_t i = 0; i < out.feats.size(); ++i) {
      const at::Tensor& level = special["__level" + std::to_string(i) + "__"];
      ASSERT_EQ(out.feats[i].sizes(), level.sizes()) << s << " level " << i;
      const double scale = level.abs().max().item<double>();
      EXPECT_LT((out.feats[i] - level).abs().max().item<double>(), 1e-3 * scale) << s << " level " << i;
    }
  }
}

// ---- checkpoints and the CLI ----

TEST(YOLO11, CheckpointMetaRecordsTheFamily) {
  CheckpointMeta meta;
  meta.model_family = "11";
  meta.model_scale = "s";
  meta.nc = 2;
  meta.names = {"a", "b"};
  nlohmann::json j = MetaToJson(meta);
  EXPECT_EQ(j["model_family"], "11");
  Result<CheckpointMeta> back = MetaFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->model_family, "11");
  EXPECT_EQ(MetaModelName(*back), "yolo11s");
  // Written before YOLO11: no model_family, which means v8.
  j.erase("model_family");
  back = MetaFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->model_family, "v8");
  EXPECT_EQ(MetaModelName(*back), "yolov8s");
  j["model_family"] = "v5";
  EXPECT_FALSE(MetaFromJson(j).ok());
  j["model_family"] = 11;
  EXPECT_FALSE(MetaFromJson(j).ok());
}

TEST(YOLO11, TrainInterruptResumeThenValAndPredictFromTheCli) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(8, 4));
  TrainOptions o = testutil::TinyRun(cache, tmp / "run");
  o.model = "yolo11n";
  o.epochs = 1;
  // Interrupted after the first of two batches, then resumed: the checkpoint must rebuild a YOLO11.
  std::atomic<bool> cancel{false};
  struct StopAfterFirstBatch final : TrainObserver {
    explicit StopAfterFirstBatch(std::atomic<bool>* f) : flag(f) {}
    void OnTrainProgress(const BatchProgress&) override { flag->store(true); }
    std::atomic<bool>* flag;
  } stopper(&cancel);
  Result<TrainSummary> first = Train(o, TrainHooks{&stopper, &cancel, {}, {}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->interrupted);
  const fs::path last = tmp / "run" / "weights" / "last.pt";
  {
    auto r = CheckpointReader::Open(last, at::Device(at::kCPU));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)->meta().model_family, "11");
    EXPECT_EQ((*r)->meta().model_scale, "n");
    Result<DetectionModel> m = (*r)->BuildInferenceModel(at::Device(at::kCPU));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ((*m)->family(), ModelFamily::k11);
    EXPECT_EQ(CountParameters(**m), CountParameters(*Build("yolo11n", 4)));
  }
  Result<TrainOptions> ro = ResumeOptions(last);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_EQ(ro->model, "yolo11n");
  cancel = false;
  Result<TrainSummary> second = Train(*ro, TrainHooks{nullptr, &cancel, last, {}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(second->interrupted);
  EXPECT_EQ(second->epochs_completed, 1);

  // The CLI: train --model yolo11n, then val and predict on its weights.
  const fs::path run = tmp / "cli";
  testing::CliRun t = testing::RunTool(
      "yolocache-train", tmp.path(),
      {"train", "--data", cache.string(), "--model", "yolo11n", "--imgsz", "64", "--epochs", "1", "--batch", "4",
       "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--out", run.string()});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("model: yolo11n, 4 classes"), std::string::npos) << t.out;
  testing::CliRun v = testing::RunTool("yolocache-train", tmp.path(),
                                       {"val", "--weights", (run / "weights" / "best.pt").string(), "--data",
                                        cache.string(), "--device", "cpu", "--threads", "1", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  nlohmann::json j = nlohmann::json::parse(v.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << v.out;
  EXPECT_EQ(j["images"], 4);
  testing::CliRun p = testing::RunTool(
      "yolocache-train", tmp.path(),
      {"predict", "--weights", (run / "weights" / "last.pt").string(), (tmp / "data" / "images" / "val").string(),
       "--out", (tmp / "pred").string(), "--device", "cpu", "--conf", "0.001", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json pj = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_TRUE(pj.is_array()) << p.out;
  EXPECT_EQ(pj.size(), 4u);
  // A bad --model names the accepted ones (usage error, exit 2).
  testing::CliRun bad = testing::RunTool("yolocache-train", tmp.path(),
                                         {"train", "--data", cache.string(), "--model", "yolo12n", "--device", "cpu",
                                          "--out", (tmp / "bad").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("yolo11n"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace yc::trainer
