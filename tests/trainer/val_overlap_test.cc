// --val-overlap (trainer/engine/end_epoch_overlap.cc): an epoch's validation and checkpoints made from a
// device copy of its state on another thread while the next epoch trains give the rows and files of the
// in-line end. On the CPU `on` forces it (auto keeps CPU runs in line).
#include <atomic>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/engine/epoch_shadow.h"
#include "trainer/engine/optimizer.h"
#include "trainer/engine/results_log.h"
#include "trainer/engine/trainer.h"
#include "trainer/io/checkpoint.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testutil::TinyRun;

DetectionModel SeededModel(uint64_t seed, int64_t nc = 3) {
  at::manual_seed(seed);
  return DetectionModel(ModelOptions(ModelFamily::kV8, ModelScale::kN, nc));
}

std::vector<at::Tensor> StateOf(const torch::nn::Module& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.named_parameters(true)) out.push_back(p.value().detach().clone());
  for (const auto& b : m.named_buffers(true)) out.push_back(b.value().detach().clone());
  return out;
}

bool Equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i], b[i])) return false;
  }
  return true;
}

void Perturb(torch::nn::Module& m, double by) {
  c10::NoGradGuard no_grad;
  for (auto& p : m.parameters(true)) p.add_(by);
}

TEST(EpochShadow, KeepsTheCapturedStateWhileTrainingGoesOn) {
  DetectionModel model = SeededModel(1), ema = SeededModel(2);
  OptimizerSpec spec;
  auto opt = BuildOptimizer(*model, spec, 5e-4);
  EpochShadow shadow;
  ASSERT_TRUE(shadow.Capture(*model, *ema, *opt).ok());
  EXPECT_TRUE(Equal(StateOf(shadow.model()), StateOf(*model)));
  EXPECT_TRUE(Equal(StateOf(shadow.ema()), StateOf(*ema)));
  const std::vector<at::Tensor> at_capture = StateOf(*ema);
  const void* storage = shadow.ema().parameters(true)[0].data_ptr();
  Perturb(*ema, 0.5);  // the next epoch trains
  EXPECT_TRUE(Equal(StateOf(shadow.ema()), at_capture));
  ASSERT_TRUE(shadow.Capture(*model, *ema, *opt).ok());  // the next epoch's end: copied in place
  EXPECT_TRUE(Equal(StateOf(shadow.ema()), StateOf(*ema)));
  EXPECT_EQ(shadow.ema().parameters(true)[0].data_ptr(), storage);
  EXPECT_EQ(shadow.ema().is_training(), ema->is_training());
}

// Rows, metrics, best epoch, checkpoint weights and optimizer state of a run with every epoch end but the
// last made beside the next epoch, against the same run with in-line ends (exact_resume: the fp32 model
// and optimizer in the files too; otherwise Ultralytics' compact form).
class ValOverlapRun : public ::testing::TestWithParam<bool> {};

TEST_P(ValOverlapRun, SameRowsAndCheckpointsAsInLineEnds) {
  const bool exact = GetParam();
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(12, 8));
  auto run = [&](const std::string& overlap) {
    TrainOptions o = TinyRun(cache, tmp / overlap);
    o.epochs = 4;
    o.optimizer = "SGD";
    o.warmup_epochs = 0;
    o.nbs = o.batch;  // a step every batch: no gradients pending at an epoch's end (those end in line)
    o.seed = 3;
    o.save_every = 1;
    o.keep = 0;  // every epochN.pt
    o.exact_resume = exact;
    o.val_overlap = overlap;
    Result<TrainSummary> s = Train(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : TrainSummary{};
  };
  const TrainSummary in_line = run("off"), beside = run("on");
  EXPECT_EQ(in_line.gap_parts.beside, 0);
  EXPECT_EQ(beside.gap_parts.beside, 3);  // epochs 1-3; the last epoch's end is in line
  EXPECT_GT(beside.gap_parts.beside_seconds, 0.0);
  EXPECT_EQ(beside.best_epoch, in_line.best_epoch);
  EXPECT_DOUBLE_EQ(beside.best_fitness, in_line.best_fitness);

  auto rows_a = ReadResultsCsv(tmp / "off" / "results.csv"), rows_b = ReadResultsCsv(tmp / "on" / "results.csv");
  ASSERT_TRUE(rows_a.ok() && rows_b.ok());
  ASSERT_EQ(rows_a->size(), 4u);
  ASSERT_EQ(rows_b->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const EpochRecord &a = (*rows_a)[i], &b = (*rows_b)[i];
    EXPECT_EQ(b.epoch, a.epoch);
    EXPECT_TRUE(b.validated);
    for (int k = 0; k < 3; ++k) {
      EXPECT_DOUBLE_EQ(b.train_loss[k], a.train_loss[k]) << "epoch " << i + 1;
      EXPECT_DOUBLE_EQ(b.val_loss[k], a.val_loss[k]) << "epoch " << i + 1;
      EXPECT_DOUBLE_EQ(b.lr[k], a.lr[k]) << "epoch " << i + 1;
    }
    EXPECT_DOUBLE_EQ(b.precision, a.precision) << "epoch " << i + 1;
    EXPECT_DOUBLE_EQ(b.map50, a.map50) << "epoch " << i + 1;
    EXPECT_DOUBLE_EQ(b.map50_95, a.map50_95) << "epoch " << i + 1;
  }

  for (const std::string file : {"epoch1.pt", "epoch2.pt", "epoch3.pt", "best.pt"}) {
    SCOPED_TRACE(file);
    auto ra = CheckpointReader::Open(tmp / "off" / "weights" / file, at::Device(at::kCPU));
    auto rb = CheckpointReader::Open(tmp / "on" / "weights" / file, at::Device(at::kCPU));
    ASSERT_TRUE(ra.ok()) << ra.status().ToString();
    ASSERT_TRUE(rb.ok()) << rb.status().ToString();
    const CheckpointMeta &ma = (*ra)->meta(), &mb = (*rb)->meta();
    EXPECT_EQ(mb.kind, ma.kind);
    EXPECT_EQ(mb.state.epoch, ma.state.epoch);
    EXPECT_EQ(mb.state.optimizer_steps, ma.state.optimizer_steps);
    EXPECT_EQ(mb.state.ema_updates, ma.state.ema_updates);
    EXPECT_EQ(mb.state.images_seen, ma.state.images_seen);
    EXPECT_EQ(mb.state.best_epoch, ma.state.best_epoch);
    EXPECT_DOUBLE_EQ(mb.state.best_fitness, ma.state.best_fitness);
    EXPECT_EQ(mb.state.finished, ma.state.finished);
    EXPECT_EQ(mb.metrics, ma.metrics);
    auto ema_a = (*ra)->BuildInferenceModel(at::Device(at::kCPU)), ema_b = (*rb)->BuildInferenceModel(at::Device(at::kCPU));
    ASSERT_TRUE(ema_a.ok() && ema_b.ok());
    EXPECT_TRUE(Equal(StateOf(**ema_b), StateOf(**ema_a)));
    if ((*ra)->is_release()) continue;
    // The optimizer state, read back into a fresh optimizer over a model of the file's weights.
    // (The compact form keeps no model tensors: the model resumes from the EMA.)
    DetectionModel model_a = SeededModel(9, ma.nc), model_b = SeededModel(9, mb.nc);
    const char* section = exact ? "model" : "ema";
    ASSERT_TRUE((*ra)->LoadModule(section, *model_a).ok());
    ASSERT_TRUE((*rb)->LoadModule(section, *model_b).ok());
    EXPECT_TRUE(Equal(StateOf(*model_b), StateOf(*model_a)));
    OptimizerSpec spec;
    auto opt_a = BuildOptimizer(*model_a, spec, 5e-4), opt_b = BuildOptimizer(*model_b, spec, 5e-4);
    ASSERT_TRUE((*ra)->LoadOptimizer(*opt_a).ok());
    ASSERT_TRUE((*rb)->LoadOptimizer(*opt_b).ok());
    size_t compared = 0;
    for (size_t g = 0; g < opt_a->param_groups().size(); ++g) {
      const auto &pa = opt_a->param_groups()[g].params(), &pb = opt_b->param_groups()[g].params();
      ASSERT_EQ(pa.size(), pb.size());
      for (size_t i = 0; i < pa.size(); ++i) {
        auto a = opt_a->state().find(OptimizerStateKey(pa[i]));
        auto b = opt_b->state().find(OptimizerStateKey(pb[i]));
        ASSERT_EQ(a == opt_a->state().end(), b == opt_b->state().end());
        if (a == opt_a->state().end()) continue;
        EXPECT_TRUE(at::equal(static_cast<const torch::optim::SGDParamState&>(*a->second).momentum_buffer(),
                              static_cast<const torch::optim::SGDParamState&>(*b->second).momentum_buffer()));
        ++compared;
      }
    }
    EXPECT_GT(compared, 10u);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, ValOverlapRun, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "ExactResume" : "Compact"; });

// Sets the cancel flag at a batch, like Ctrl-C would.
class CancelAt final : public TrainObserver {
 public:
  CancelAt(std::atomic<bool>* flag, int epoch, size_t batch) : flag_(flag), epoch_(epoch), batch_(batch) {}
  void OnTrainProgress(const BatchProgress& p) override {
    if (p.epoch == epoch_ && p.batch == batch_) flag_->store(true);
  }

 private:
  std::atomic<bool>* flag_;
  int epoch_;
  size_t batch_;
};

// Interrupted inside epoch 2 while epoch 1's end is still being made beside it: epoch 1's row, best.pt and
// the interrupt's last.pt are those of the in-line run interrupted at the same batch.
TEST(ValOverlap, InterruptInsideTheNextEpochKeepsTheEpochsEnd) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(12, 8));
  for (const std::string overlap : {"off", "on"}) {
    TrainOptions o = TinyRun(cache, tmp / overlap);
    o.epochs = 3;
    o.optimizer = "SGD";
    o.warmup_epochs = 0;
    o.nbs = o.batch;
    o.seed = 3;
    o.val_overlap = overlap;
    std::atomic<bool> cancel{false};
    CancelAt at(&cancel, 2, 2);
    Result<TrainSummary> s = Train(o, TrainHooks{&at, &cancel, {}, {}});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE(s->interrupted);
    EXPECT_EQ(s->gap_parts.beside, overlap == "on" ? 1 : 0);
  }
  auto rows_a = ReadResultsCsv(tmp / "off" / "results.csv"), rows_b = ReadResultsCsv(tmp / "on" / "results.csv");
  ASSERT_TRUE(rows_a.ok() && rows_b.ok());
  ASSERT_EQ(rows_b->size(), 1u);
  ASSERT_EQ(rows_a->size(), 1u);
  EXPECT_DOUBLE_EQ((*rows_b)[0].map50_95, (*rows_a)[0].map50_95);
  for (const std::string file : {"last.pt", "best.pt"}) {
    SCOPED_TRACE(file);
    auto ra = CheckpointReader::Open(tmp / "off" / "weights" / file, at::Device(at::kCPU));
    auto rb = CheckpointReader::Open(tmp / "on" / "weights" / file, at::Device(at::kCPU));
    ASSERT_TRUE(ra.ok() && rb.ok());
    EXPECT_EQ((*rb)->meta().state.epoch, (*ra)->meta().state.epoch);
    EXPECT_EQ((*rb)->meta().state.next_batch, (*ra)->meta().state.next_batch);
    EXPECT_EQ((*rb)->meta().state.best_epoch, 1);
    EXPECT_EQ((*rb)->meta().metrics, (*ra)->meta().metrics);
    auto ema_a = (*ra)->BuildInferenceModel(at::Device(at::kCPU)), ema_b = (*rb)->BuildInferenceModel(at::Device(at::kCPU));
    ASSERT_TRUE(ema_a.ok() && ema_b.ok());
    EXPECT_TRUE(Equal(StateOf(**ema_b), StateOf(**ema_a)));
  }
}

// On the GPU host: the finisher thread on its own stream beside CUDA-graphed training steps (captures of new
// box-count buckets included) ends every epoch but the last, and the run's rows and files are complete.
// CUDA training is not bit-reproducible, so this checks the machinery, not equality with an in-line run.
TEST(ValOverlap, RunsBesideGraphedTrainingOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (run on the GPU host)";
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(32, 16));
  TrainOptions o = TinyRun(cache, tmp / "run");
  o.device = "cuda";
  o.epochs = 4;
  o.nbs = o.batch;
  o.save_every = 1;
  o.keep = 0;
  o.val_overlap = "on";
  Result<TrainSummary> s = Train(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gap_parts.beside, 3);
  auto rows = ReadResultsCsv(tmp / "run" / "results.csv");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 4u);
  for (const EpochRecord& r : *rows) EXPECT_TRUE(r.validated) << "epoch " << r.epoch;
  for (const std::string file : {"epoch1.pt", "epoch2.pt", "epoch3.pt", "last.pt", "best.pt"}) {
    auto r = CheckpointReader::Open(tmp / "run" / "weights" / file, at::Device(at::kCPU));
    ASSERT_TRUE(r.ok()) << file << ": " << r.status().ToString();
    EXPECT_TRUE((*r)->BuildInferenceModel(at::Device(at::kCPU)).ok()) << file;
  }
}

}  // namespace
}  // namespace yc::trainer
