// Our best.pt and last.pt opened by Ultralytics' own code (../shared/ultralytics with Debian's python3-torch;
// skipped with a message where absent), one python process per model (tests/trainer/fixtures/
// ultralytics_weights.py): YOLO(best.pt) loads, its forward equals ours on the same input, its predict gives
// our Predictor's detections on the same images, fuse() keeps the output, export(format='torchscript') writes
// a file, and YOLO(last.pt).train(resume=True) resumes epoch 2 of 2 from it (last.pt in the default fp16
// training form), for yolov8n (nc 80) and yolo11n (nc 3). Validation figures are compared with a trained
// model in metrics_parity_test.cc (Ultralytics' validator on our best.pt).
#include <cstdio>
#include <fstream>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/batchnorm.h>

#include "libcache/source/synth.h"
#include "tests/test_support.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/engine/optimizer.h"
#include "trainer/eval/predictor.h"
#include "trainer/io/checkpoint.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Seeded weights with BatchNorm statistics away from the identity, so that fuse() has something to fold.
DetectionModel MakeModel(ModelFamily family, int64_t nc) {
  torch::manual_seed(7);
  DetectionModel model(ModelOptions(family, ModelScale::kN, nc));
  c10::NoGradGuard no_grad;
  for (auto& m : model->modules(/*include_self=*/false)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2dImpl>()) {
      bn->running_mean.normal_(0, 0.1);
      bn->running_var.uniform_(0.5, 1.5);
      bn->weight.normal_(1, 0.1);
      bn->num_batches_tracked.fill_(3);
    }
  }
  return model;
}

void WriteTensorFile(const fs::path& out, const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::ofstream f(out, std::ios::binary);
  auto put = [&](const void* p, size_t n) { f.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); };
  put("YCT1", 4);
  const auto count = static_cast<uint32_t>(tensors.size());
  put(&count, 4);
  for (const auto& [name, t] : tensors) {
    const auto len = static_cast<uint32_t>(name.size()), ndim = static_cast<uint32_t>(t.dim());
    put(&len, 4);
    put(name.data(), len);
    put(&ndim, 4);
    for (int64_t d : t.sizes()) put(&d, 8);
    at::Tensor c = t.detach().to(at::kFloat).contiguous();
    put(c.data_ptr<float>(), static_cast<size_t>(c.numel()) * 4);
  }
}

void RoundTrip(ModelFamily family, int64_t nc) {
  const testing::UltralyticsFixture fx = testing::UltralyticsFixture::Find();
  if (!fx.available) GTEST_SKIP() << fx.why;
  TempDir tmp;
  SynthOptions so;
  so.train_images = 4;
  so.val_images = 2;
  so.min_side = so.max_side = 64;
  so.classes = 3;
  ASSERT_TRUE(GenerateSynthDataset(tmp / "data", so).ok());

  DetectionModel model = MakeModel(family, nc);
  auto ema = std::dynamic_pointer_cast<DetectionModelImpl>(model->clone());
  OptimizerSpec spec;
  auto opt = BuildOptimizer(*model, spec, 5e-4);
  model->train();
  DetectOutput out = model->forward(at::rand({2, 3, 64, 64}));
  at::Tensor loss = at::zeros({});
  for (const auto& f : out.feats) loss = loss + f.square().mean();
  loss.backward();
  opt->step();
  model->eval();
  ema->eval();

  CheckpointMeta meta;
  meta.model_family = ModelFamilyName(family);
  meta.nc = nc;
  for (int64_t i = 0; i < nc; ++i) meta.names.push_back("class" + std::to_string(i));
  meta.options.data = (tmp / "data_nc.yaml").string();  // written by the fixture: data/ with nc names
  meta.options.out = (tmp / "run").string();
  meta.options.model = ModelNameString({family, ModelScale::kN});
  meta.options.device = "cpu";
  meta.options.epochs = 2;
  meta.options.imgsz = 64;
  meta.options.batch = 2;
  meta.options.threads = 1;
  meta.options.optimizer = "SGD";
  meta.options.plots = false;
  meta.state.epoch = 1;  // epoch 1 of 2 done
  meta.state.best_fitness = 0.01;
  meta.state.ema_updates = 1;
  meta.created = "2026-01-01T00:00:00Z";
  CheckpointContents last;
  last.meta = meta;
  last.model = model.get();
  last.ema = ema.get();
  last.optimizer = opt.get();
  last.full_precision = false;  // what training writes by default (TrainOptions::exact_resume off)
  ASSERT_TRUE(WriteCheckpoint(tmp / "last.pt", last).ok());
  ASSERT_TRUE(WriteCheckpoint(tmp / "best.pt", ReleaseContents(meta, *ema)).ok());
  std::printf("%s nc %lld: last.pt while training (SGD) %lld bytes, release (best.pt, final last.pt) %lld bytes\n",
              ModelNameString({family, ModelScale::kN}).c_str(), static_cast<long long>(nc),
              static_cast<long long>(fs::file_size(tmp / "last.pt")), static_cast<long long>(fs::file_size(tmp / "best.pt")));

  // Ours on best.pt (fp16 weights widened), the reference for Ultralytics' forward.
  Result<std::unique_ptr<CheckpointReader>> r = CheckpointReader::Open(tmp / "best.pt", at::Device(at::kCPU));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Result<DetectionModel> ours = (*r)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  const at::Tensor input = at::rand({1, 3, 64, 64});
  at::Tensor pred;
  {
    c10::NoGradGuard no_grad;
    pred = (*ours)->forward(input).pred;
  }
  WriteTensorFile(tmp / "io.bin", {{"input", input}, {"pred", pred}});
  // Our predict on the val images, as Ultralytics' predict will run them (imgsz 64, conf 0.001).
  PredictOptions po;
  po.imgsz = 64;
  po.conf = 0.001;
  Result<std::unique_ptr<Predictor>> predictor = Predictor::Load(tmp / "best.pt", at::Device(at::kCPU), po);
  ASSERT_TRUE(predictor.ok()) << predictor.status().ToString();
  nlohmann::json detections = nlohmann::json::object();
  for (const auto& e : fs::directory_iterator(tmp / "data" / "images" / "val")) {
    Result<PredictResult> pr = (*predictor)->PredictFile({e.path(), fs::path("pred") / e.path().filename(), false}, tmp.path());
    ASSERT_TRUE(pr.ok()) << pr.status().ToString();
    nlohmann::json rows = nlohmann::json::array();
    for (const Detection& d : pr->detections) rows.push_back({d.x1, d.y1, d.x2, d.y2, d.conf, d.cls});
    detections[e.path().filename().string()] = rows;
  }
  {
    std::ofstream(tmp / "ours_predict.json") << detections.dump();
  }
  // And last.pt reads back as our resumable checkpoint.
  Result<std::unique_ptr<CheckpointReader>> l = CheckpointReader::Open(tmp / "last.pt", at::Device(at::kCPU));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_TRUE((*l)->has_optimizer());
  EXPECT_FALSE((*l)->is_release());

  ASSERT_EQ(fx.Run("ultralytics_weights.py", {(tmp / "best.pt").string(), (tmp / "last.pt").string(),
                                              (tmp / "io.bin").string(), (tmp / "data" / "data.yaml").string(),
                                              (tmp / "data_nc.yaml").string(), std::to_string(nc),
                                              (tmp / "ours_predict.json").string(), (tmp / "out.json").string()},
                   tmp.path()),
            0)
      << testing::ReadFile(tmp / "python.log");
  const nlohmann::json got = nlohmann::json::parse(testing::ReadFile(tmp / "out.json"));
  // fp32 on both sides over the same fp16 weights; boxes are in pixels (up to 64).
  EXPECT_LT(got["forward_max_diff"].get<double>(), 1e-3) << got.dump();
  EXPECT_LT(got["fused_max_diff"].get<double>(), 1e-3) << got.dump();
  // Predict: as many boxes, and each of our 20 most confident found among Ultralytics' (same class, IoU
  // > 0.99, confidence within 1e-3).
  // An untrained nc-80 head scores ~1e-5 (Detect's class-bias initialisation), below any conf, so only the
  // nc-3 model is sure to give boxes; for nc 80 both sides must give none alike.
  if (nc <= 3) {
    EXPECT_GT(got["predict_ours"].get<int>(), 0) << got.dump();
  }
  EXPECT_NEAR(got["predict_theirs"].get<double>(), got["predict_ours"].get<double>(),
              0.02 * got["predict_ours"].get<double>() + 1) << got.dump();
  EXPECT_EQ(got["predict_top_matched"].get<int>(), got["predict_top"].get<int>()) << got.dump();
  EXPECT_TRUE(got["exported"].get<bool>()) << got.dump();
  EXPECT_EQ(got["resumed_start_epoch"].get<int>(), 1) << got.dump();  // Ultralytics' 0-based: epoch 2
}

TEST(UltralyticsWeights, Yolov8nNc80OpensInUltralytics) { RoundTrip(ModelFamily::kV8, 80); }
TEST(UltralyticsWeights, Yolo11nNc3OpensInUltralytics) { RoundTrip(ModelFamily::k11, 3); }

}  // namespace
}  // namespace yc::trainer
