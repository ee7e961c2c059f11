// Checkpoint files: everything written comes back (weights, BN statistics, EMA, optimizer state,
// pending gradients, meta), damaged or foreign files are errors with the path, never crashes.
#include "trainer/io/checkpoint.h"

#include <fstream>
#include <limits>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

#include "tests/test_support.h"
#include "trainer/engine/ema.h"
#include "trainer/loss/loss.h"
#include "trainer/engine/optimizer.h"
#include "trainer/io/optimizer_state.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// One SGD step on random data so that momentum buffers, BN statistics and grads are non-trivial.
void SgdStep(DetectionModel& model, torch::optim::Optimizer& opt, uint64_t seed) {
  at::manual_seed(seed);
  model->train();
  auto x = at::rand({2, 3, 64, 64});
  auto labels = at::tensor({0.f, 1.f, 0.5f, 0.5f, 0.3f, 0.4f, 1.f, 2.f, 0.4f, 0.6f, 0.2f, 0.2f}).view({2, 6});
  DetectionLoss loss(3, model->strides());
  auto out = model->forward(x);
  auto l = loss(out.feats, labels, 1);
  ASSERT_TRUE(l.ok());
  l->total.backward();
  opt.step();
}

CheckpointMeta SampleMeta() {
  CheckpointMeta m;
  m.model_scale = "n";
  m.nc = 3;
  m.names = {"circle", "rectangle", "triangle"};
  m.options.epochs = 42;
  m.options.lr0 = 0.02;
  m.options.hyp.mosaic = 0.25;
  m.options.amp = AmpMode::kOff;
  m.state.epoch = 3;
  m.state.next_batch = 5;
  m.state.last_opt_step = 77;
  m.state.best_fitness = 0.125;
  m.state.epoch_loss_sum = {1.5, 2.5, 3.5};
  m.created = "2024-05-01T12:00:00Z";
  m.metrics = {{"mAP50", 0.5}};
  return m;
}

std::unique_ptr<torch::optim::Optimizer> MakeSgd(DetectionModel& model) {
  OptimizerSpec spec;
  spec.lr = 0.01;
  spec.momentum = 0.9;
  return BuildOptimizer(*model, spec, 5e-4);
}

bool SameState(const torch::nn::Module& a, const torch::nn::Module& b) {
  auto pa = a.named_parameters(true), pb = b.named_parameters(true);
  for (const auto& p : pa) {
    if (!at::equal(p.value(), pb[p.key()])) return false;
  }
  auto ba = a.named_buffers(true), bb = b.named_buffers(true);
  for (const auto& x : ba) {
    if (!at::equal(x.value(), bb[x.key()])) return false;
  }
  return true;
}

// A model two SGD steps in (seeded), its optimizer, and an EMA taken after the first step and updated
// after the second: the state both checkpoint forms are written from.
struct SteppedModel {
  DetectionModel model = Seeded();
  std::unique_ptr<torch::optim::Optimizer> opt = MakeSgd(model);
  ModelEMA ema = FirstStepEma(model, *opt);

  SteppedModel() {
    SgdStep(model, *opt, 12);
    EXPECT_TRUE(ema.Update(*model).ok());
  }
  static DetectionModel Seeded() {
    at::manual_seed(1);
    return DetectionModel(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  }
  static ModelEMA FirstStepEma(DetectionModel& m, torch::optim::Optimizer& o) {
    SgdStep(m, o, 11);
    return ModelEMA(*m);
  }
};

TEST(Checkpoint, RoundTripsEverything) {
  TempDir tmp;
  SteppedModel stepped;
  DetectionModel& model = stepped.model;
  auto& opt = stepped.opt;
  ModelEMA& ema = stepped.ema;
  // Pending gradients of a third batch (accumulation not yet stepped).
  opt->zero_grad();
  {
    at::manual_seed(13);
    DetectionLoss loss(3, model->strides());
    auto out = model->forward(at::rand({2, 3, 64, 64}));
    auto l = loss(out.feats, at::zeros({0, 6}), 0);
    ASSERT_TRUE(l.ok());
    l->total.backward();
  }

  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = model.get();
  c.ema = ema.module().get();
  c.optimizer = opt.get();
  c.grads = true;
  const fs::path path = tmp / "weights" / "last.pt";
  ASSERT_TRUE(WriteCheckpoint(path, c).ok());
  for (const auto& e : fs::directory_iterator(tmp / "weights")) {
    EXPECT_EQ(e.path().filename(), "last.pt") << "temporary file left behind: " << e.path();
  }

  auto reader = CheckpointReader::Open(path, at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const CheckpointMeta& m = (*reader)->meta();
  EXPECT_EQ(m.names, c.meta.names);
  EXPECT_EQ(m.nc, 3);
  EXPECT_EQ(m.options.epochs, 42);
  EXPECT_DOUBLE_EQ(m.options.lr0, 0.02);
  EXPECT_DOUBLE_EQ(m.options.hyp.mosaic, 0.25);
  EXPECT_EQ(m.options.amp, AmpMode::kOff);
  EXPECT_EQ(m.state.epoch, 3);
  EXPECT_EQ(m.state.next_batch, 5);
  EXPECT_EQ(m.state.last_opt_step, 77);
  EXPECT_DOUBLE_EQ(m.state.best_fitness, 0.125);
  EXPECT_DOUBLE_EQ(m.state.epoch_loss_sum[2], 3.5);
  EXPECT_EQ(m.metrics["mAP50"], 0.5);
  EXPECT_TRUE((*reader)->has_ema());
  EXPECT_TRUE((*reader)->has_optimizer());
  EXPECT_TRUE((*reader)->has_grads());

  // Into fresh objects with different random init.
  at::manual_seed(99);
  DetectionModel model2(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  EXPECT_FALSE(SameState(*model, *model2));
  ASSERT_TRUE((*reader)->LoadModule("model", *model2).ok());
  EXPECT_TRUE(SameState(*model, *model2));  // BatchNorm running stats and num_batches_tracked included
  DetectionModel ema2(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  ASSERT_TRUE((*reader)->LoadModule("ema", *ema2).ok());
  EXPECT_TRUE(SameState(*ema.module(), *ema2));
  auto opt2 = MakeSgd(model2);
  ASSERT_TRUE((*reader)->LoadOptimizer(*opt2).ok());
  ASSERT_TRUE((*reader)->LoadGrads(*model2).ok());
  auto p1 = model->named_parameters(true), p2 = model2->named_parameters(true);
  for (const auto& p : p1) {
    if (!p.value().grad().defined()) continue;
    ASSERT_TRUE(p2[p.key()].grad().defined()) << p.key();
    EXPECT_TRUE(at::equal(p.value().grad(), p2[p.key()].grad())) << p.key();
  }
  // Same momentum buffers and grads: the next step gives the same weights.
  opt->step();
  opt2->step();
  EXPECT_TRUE(SameState(*model, *model2));

  // The inference model uses the EMA weights, in eval mode.
  auto inference = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_TRUE(inference.ok()) << inference.status().ToString();
  EXPECT_FALSE((*inference)->is_training());
  EXPECT_TRUE(SameState(*ema.module(), **inference));
}

// The compact training form (the default: Ultralytics' size): the EMA and the optimizer state in fp16,
// stored once for both readers, no model tensors; the model resumes from the EMA, the momentum comes back
// widened from fp16; about a third of the full-precision file.
TEST(Checkpoint, CompactTrainingFormHoldsTheEmaAndOptimizerInHalfPrecision) {
  TempDir tmp;
  SteppedModel stepped;
  DetectionModel& model = stepped.model;
  auto& opt = stepped.opt;
  ModelEMA& ema = stepped.ema;
  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = model.get();
  c.ema = ema.module().get();
  c.optimizer = opt.get();
  const fs::path full = tmp / "full.pt", compact = tmp / "compact.pt";
  ASSERT_TRUE(WriteCheckpoint(full, c).ok());
  c.full_precision = false;
  ASSERT_TRUE(WriteCheckpoint(compact, c).ok());
  const double ratio = static_cast<double>(fs::file_size(compact)) / static_cast<double>(fs::file_size(full));
  EXPECT_LT(ratio, 0.4) << fs::file_size(compact) << " vs " << fs::file_size(full) << " bytes";
  EXPECT_GT(ratio, 0.25);  // the EMA and the momentum are each stored once, not dropped

  auto reader = CheckpointReader::Open(compact, at::Device(at::kCPU));  // checksum verified
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_FALSE((*reader)->is_release());
  EXPECT_TRUE((*reader)->has_ema());
  EXPECT_TRUE((*reader)->has_optimizer());
  DetectionModel model2(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  ASSERT_TRUE((*reader)->LoadModule("model", *model2).ok());
  auto want = ema.module()->named_parameters(true);
  for (const auto& p : model2->named_parameters(true)) {
    EXPECT_TRUE(at::equal(p.value(), want[p.key()].to(at::kHalf).to(at::kFloat))) << p.key();
  }
  auto opt2 = MakeSgd(model2);
  ASSERT_TRUE((*reader)->LoadOptimizer(*opt2).ok());
  const auto& params = opt->param_groups()[1].params();
  const auto& params2 = opt2->param_groups()[1].params();
  ASSERT_EQ(params.size(), params2.size());
  size_t compared = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    auto a = opt->state().find(OptimizerStateKey(params[i]));
    if (a == opt->state().end()) continue;  // a parameter without gradients has no momentum
    auto b = opt2->state().find(OptimizerStateKey(params2[i]));
    ASSERT_NE(b, opt2->state().end()) << "parameter " << i;
    const at::Tensor& m = static_cast<const torch::optim::SGDParamState&>(*a->second).momentum_buffer();
    const at::Tensor& m2 = static_cast<const torch::optim::SGDParamState&>(*b->second).momentum_buffer();
    EXPECT_EQ(m2.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(m2, m.to(at::kHalf).to(at::kFloat))) << "parameter " << i;
    ++compared;
  }
  EXPECT_GT(compared, 10u);
}

// A diverged run's weights: FirstNonFiniteTensor names the first NaN/inf tensor, and a checkpoint holding
// one cannot be built into an inference model (val and predict would print garbage).
TEST(Checkpoint, NonFiniteWeightsAreNamedAndRefusedForInference) {
  TempDir tmp;
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  EXPECT_EQ(FirstNonFiniteTensor(*model), "");
  std::string poisoned;
  {
    c10::NoGradGuard no_grad;
    auto named = model->named_buffers(true);
    for (const auto& b : named) {
      if (!at::isFloatingType(b.value().scalar_type())) continue;
      b.value().view({-1})[0] = std::numeric_limits<float>::infinity();  // e.g. a BatchNorm running_var
      poisoned = b.key();
      break;
    }
  }
  ASSERT_FALSE(poisoned.empty());
  EXPECT_EQ(FirstNonFiniteTensor(*model), poisoned);
  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = model.get();
  const fs::path path = tmp / "diverged.pt";
  ASSERT_TRUE(WriteCheckpoint(path, c).ok());
  auto reader = CheckpointReader::Open(path, at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto inference = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_FALSE(inference.ok());
  EXPECT_EQ(inference.status().code(), Status::Code::kCorruption);
  EXPECT_NE(inference.status().message().find("diverged.pt"), std::string::npos) << inference.status().message();
  EXPECT_NE(inference.status().message().find(poisoned), std::string::npos) << inference.status().message();
}

// A snapshot holds the state at Take(): training steps taken before it is serialised (on the background
// writer, in the trainer) do not leak into the file, and the optimizer keeps its own live state.
TEST(Checkpoint, SnapshotIsFrozenAtTake) {
  TempDir tmp;
  at::manual_seed(1);
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  auto opt = MakeSgd(model);
  SgdStep(model, *opt, 11);
  at::manual_seed(7);
  DetectionModel frozen(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));  // a copy of the state at Take() time
  {
    c10::NoGradGuard no_grad;
    auto src = model->named_parameters(true);
    for (auto& p : frozen->named_parameters(true)) p.value().copy_(src[p.key()]);
    auto bsrc = model->named_buffers(true);
    for (auto& b : frozen->named_buffers(true)) b.value().copy_(bsrc[b.key()]);
  }
  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = model.get();
  c.optimizer = opt.get();
  auto snap = CheckpointSnapshot::Take(c);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  opt->zero_grad();
  SgdStep(model, *opt, 12);  // training goes on before the snapshot is written
  EXPECT_FALSE(SameState(*model, *frozen));
  auto bytes = (*snap)->Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_TRUE(WriteFileAtomic(tmp / "last.pt", **bytes).ok());

  auto reader = CheckpointReader::Open(tmp / "last.pt", at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  DetectionModel loaded(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  ASSERT_TRUE((*reader)->LoadModule("model", *loaded).ok());
  EXPECT_TRUE(SameState(*loaded, *frozen));
  // The saved momentum buffers are those after step 11 alone: replaying step 12 from the file gives the
  // live model's weights.
  auto opt2 = MakeSgd(loaded);
  ASSERT_TRUE((*reader)->LoadOptimizer(*opt2).ok());
  SgdStep(loaded, *opt2, 12);
  EXPECT_TRUE(SameState(*loaded, *model));
}

// An optimizer captured and frozen on its device (OptimizerCapture: what EpochShadow keeps while the next
// epoch trains) is written later, after more steps, as it was at the capture: the file written from the
// capture resumes exactly like one written from the live optimizer at that point.
TEST(Checkpoint, FrozenOptimizerCaptureIsWrittenAsItWasAtTheCapture) {
  TempDir tmp;
  SteppedModel stepped;
  DetectionModel& model = stepped.model;
  auto& opt = stepped.opt;
  at::manual_seed(7);
  DetectionModel frozen(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));  // the model at the capture
  {
    c10::NoGradGuard no_grad;
    auto src = model->named_parameters(true);
    for (auto& p : frozen->named_parameters(true)) p.value().copy_(src[p.key()]);
    auto bsrc = model->named_buffers(true);
    for (auto& b : frozen->named_buffers(true)) b.value().copy_(bsrc[b.key()]);
  }
  Result<OptimizerCapture> capture = OptimizerCapture::Capture(*opt, model.get());
  ASSERT_TRUE(capture.ok()) << capture.status().ToString();
  EXPECT_TRUE(capture->has_ultralytics);
  EXPECT_EQ(capture->kind, "SGD");
  capture->Freeze();
  opt->zero_grad();
  SgdStep(model, *opt, 12);  // the live optimizer steps on

  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = frozen.get();
  c.optimizer_capture = &*capture;
  ASSERT_TRUE(WriteCheckpoint(tmp / "captured.pt", c).ok());
  auto reader = CheckpointReader::Open(tmp / "captured.pt", at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->has_optimizer());
  DetectionModel loaded(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  ASSERT_TRUE((*reader)->LoadModule("model", *loaded).ok());
  auto opt2 = MakeSgd(loaded);
  ASSERT_TRUE((*reader)->LoadOptimizer(*opt2).ok());
  SgdStep(loaded, *opt2, 12);  // replaying the step taken after the capture reaches the live model
  EXPECT_TRUE(SameState(*loaded, *model));
}

TEST(Checkpoint, ModelOnlyFileIsEnoughForInferenceButNotForResume) {
  TempDir tmp;
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = model.get();
  ASSERT_TRUE(WriteCheckpoint(tmp / "m.pt", c).ok());
  auto reader = CheckpointReader::Open(tmp / "m.pt", at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok());
  EXPECT_FALSE((*reader)->has_ema());
  EXPECT_FALSE((*reader)->has_optimizer());
  EXPECT_FALSE((*reader)->has_grads());
  EXPECT_FALSE((*reader)->is_release());
  EXPECT_EQ((*reader)->meta().kind, kCheckpointKindTraining);
  auto inference = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_TRUE(inference.ok());
  EXPECT_TRUE(SameState(*model, **inference));
  auto opt = MakeSgd(model);
  EXPECT_EQ((*reader)->LoadOptimizer(*opt).code(), Status::Code::kCorruption);
  // A model of another shape does not take the weights.
  DetectionModel other(ModelOptions(ModelFamily::kV8, ModelScale::kN, 5));
  Status st = (*reader)->LoadModule("model", *other);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("m.pt"), std::string::npos) << st.message();
}

TEST(Checkpoint, BadFilesAreErrorsNamingThePath) {
  TempDir tmp;
  auto missing = CheckpointReader::Open(tmp / "nope.pt", at::Device(at::kCPU));
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);

  testing::WriteFile(tmp / "junk.pt", "this is not a checkpoint at all");
  auto junk = CheckpointReader::Open(tmp / "junk.pt", at::Device(at::kCPU));
  EXPECT_EQ(junk.status().code(), Status::Code::kCorruption);
  EXPECT_NE(junk.status().message().find("junk.pt"), std::string::npos);

  // A truncated real checkpoint.
  DetectionModel model(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  CheckpointContents c;
  c.meta = SampleMeta();
  c.model = model.get();
  ASSERT_TRUE(WriteCheckpoint(tmp / "ok.pt", c).ok());
  std::string bytes = testing::ReadFile(tmp / "ok.pt");
  testing::WriteFile(tmp / "cut.pt", bytes.substr(0, bytes.size() / 2));
  auto cut = CheckpointReader::Open(tmp / "cut.pt", at::Device(at::kCPU));
  EXPECT_EQ(cut.status().code(), Status::Code::kCorruption);

  // A LibTorch archive that is not ours (no meta record).
  torch::serialize::OutputArchive foreign;
  foreign.write("weights", at::ones({3}));
  foreign.save_to((tmp / "foreign.pt").string());
  auto f = CheckpointReader::Open(tmp / "foreign.pt", at::Device(at::kCPU));
  EXPECT_EQ(f.status().code(), Status::Code::kCorruption);
  EXPECT_NE(f.status().message().find("not a yolocache checkpoint"), std::string::npos) << f.status().message();
}

TEST(Checkpoint, MetaJsonValidation) {
  auto j = MetaToJson(SampleMeta());
  auto back = MetaFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->options.epochs, 42);
  j["format"] = kCheckpointFormat + 1;
  EXPECT_EQ(MetaFromJson(j).status().code(), Status::Code::kUnsupported);
  j = MetaToJson(SampleMeta());
  j["model_scale"] = "q";
  EXPECT_EQ(MetaFromJson(j).status().code(), Status::Code::kCorruption);
  j = MetaToJson(SampleMeta());
  j["state"]["epoch"] = "three";
  EXPECT_EQ(MetaFromJson(j).status().code(), Status::Code::kCorruption);
  j = MetaToJson(SampleMeta());
  j["options"]["batch"] = "sixteen";
  EXPECT_EQ(MetaFromJson(j).status().code(), Status::Code::kCorruption);
  EXPECT_FALSE(MetaFromJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace yc::trainer

namespace yc::trainer {
namespace {

// Release weights (best.pt): the EMA in fp16 and nothing else. For yolov8n at nc 80 that is about
// 6.3 MB, as Ultralytics' stripped yolov8n.pt; the weights come back (widened) within fp16 rounding,
// val/predict/export/--weights load them, and resuming from them is refused.
TEST(Checkpoint, ReleaseWeightsAreTheEmaInHalfPrecision) {
  TempDir tmp;
  at::manual_seed(5);
  DetectionModel ema(ModelOptions(ModelFamily::kV8, ModelScale::kN, 80));
  {
    c10::NoGradGuard no_grad;
    for (auto& b : ema->named_buffers(true)) {
      if (b.key().find("running_var") != std::string::npos) b.value().uniform_(0.5, 2.0);
    }
  }
  CheckpointMeta meta = SampleMeta();
  meta.nc = 80;
  meta.names.assign(80, "thing");
  const fs::path path = tmp / "best.pt";
  ASSERT_TRUE(WriteCheckpoint(path, ReleaseContents(meta, *ema)).ok());

  int64_t floats = 0;
  for (const auto& p : ema->named_parameters(true)) floats += p.value().numel();
  const auto bytes = static_cast<int64_t>(fs::file_size(path));
  std::printf("yolov8n release weights: %lld bytes (%lld parameters)\n", static_cast<long long>(bytes),
              static_cast<long long>(floats));
  EXPECT_GT(bytes, 2 * floats);             // every parameter, 2 bytes each
  EXPECT_LT(bytes, 2 * floats + 300'000);   // and little else: no fp32 copy, no optimizer
  EXPECT_GT(bytes, 6'200'000);
  EXPECT_LT(bytes, 6'600'000);

  auto reader = CheckpointReader::Open(path, at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->is_release());
  EXPECT_FALSE((*reader)->has_ema());
  EXPECT_FALSE((*reader)->has_optimizer());
  EXPECT_TRUE((*reader)->meta().state.finished);
  EXPECT_EQ((*reader)->meta().names.size(), 80u);
  Result<DetectionModel> back = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  auto want = ema->named_parameters(true);
  for (const auto& p : (*back)->named_parameters(true)) {
    ASSERT_EQ(p.value().scalar_type(), at::kFloat) << p.key();
    EXPECT_TRUE(at::equal(p.value(), want[p.key()].to(at::kHalf).to(at::kFloat))) << p.key();
  }
  ema->eval();
  const at::Tensor x = at::rand({1, 3, 96, 96});
  const at::Tensor a = ema->forward(x).pred, b = (*back)->forward(x).pred;
  EXPECT_TRUE(at::allclose(a, b, /*rtol=*/1e-2, /*atol=*/1e-2)) << (a - b).abs().max().item<float>();

  // A tensor beyond fp16's range (a run about to diverge) is kept in fp32, not turned into infinities.
  {
    c10::NoGradGuard no_grad;
    ema->named_parameters(true)["model.0.conv.weight"].fill_(1e6f);
  }
  ASSERT_TRUE(WriteCheckpoint(path, ReleaseContents(meta, *ema)).ok());
  reader = CheckpointReader::Open(path, at::Device(at::kCPU));
  ASSERT_TRUE(reader.ok());
  back = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(at::equal((*back)->named_parameters(true)["model.0.conv.weight"],
                        ema->named_parameters(true)["model.0.conv.weight"]));
}

TEST(Checkpoint, MetaKindIsTrainingOrRelease) {
  nlohmann::json j = MetaToJson(SampleMeta());
  j["kind"] = "mystery";
  Result<CheckpointMeta> m = MetaFromJson(j);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("kind"), std::string::npos) << m.status().ToString();
  j.erase("kind");  // written before release weights existed: a training checkpoint
  m = MetaFromJson(j);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->kind, kCheckpointKindTraining);
}

}  // namespace
}  // namespace yc::trainer
