// The training loop end to end on CPU: it learns (mAP50 >= 0.5 on synthetic shapes in a few minutes),
// an interrupted run resumed from last.pt ends bit-for-bit where the uninterrupted run ends, and the
// run directory holds what Ultralytics' does (results.csv/png, last.pt, best.pt, epochN.pt).
#include "trainer/engine/trainer.h"

#include <atomic>
#include <fstream>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/io/checkpoint.h"
#include "trainer/runtime/device_feed.h"
#include "trainer/engine/results_log.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testutil::MakeSynthCache;
using testutil::SynthCacheSpec;
using testutil::TinyRun;

// Sets the cancel flag at a chosen point, like Ctrl-C would.
class StopAt final : public TrainObserver {
 public:
  StopAt(std::atomic<bool>* flag, int epoch, size_t batch) : flag_(flag), epoch_(epoch), batch_(batch) {}
  void OnTrainProgress(const BatchProgress& p) override {
    if (batch_ > 0 && p.epoch == epoch_ && p.batch == batch_) flag_->store(true);
  }
  void OnEpochEnd(const EpochRecord& r) override {
    if (batch_ == 0 && r.epoch == epoch_) flag_->store(true);
  }

 private:
  std::atomic<bool>* flag_;
  int epoch_;
  size_t batch_;  // 0: stop at the end of `epoch`
};

// Every tensor of a checkpoint section, by name.
std::vector<std::pair<std::string, at::Tensor>> Weights(const fs::path& ckpt, const std::string& section) {
  auto reader = CheckpointReader::Open(ckpt, at::Device(at::kCPU));
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  auto model = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
  EXPECT_TRUE(model.ok());
  EXPECT_TRUE((*reader)->LoadModule(section, **model).ok());
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : (*model)->named_parameters(true)) out.emplace_back(p.key(), p.value().clone());
  for (const auto& b : (*model)->named_buffers(true)) out.emplace_back(b.key(), b.value().clone());
  return out;
}

double MaxAbsDiff(const fs::path& a, const fs::path& b, const std::string& section) {
  auto wa = Weights(a, section), wb = Weights(b, section);
  EXPECT_EQ(wa.size(), wb.size());
  double m = 0;
  for (size_t i = 0; i < wa.size() && i < wb.size(); ++i) {
    EXPECT_EQ(wa[i].first, wb[i].first);
    m = std::max(m, (wa[i].second.to(at::kDouble) - wb[i].second.to(at::kDouble)).abs().max().item<double>());
  }
  return m;
}

TEST(TrainLoop, LearnsSyntheticShapes) {
  TempDir tmp;
  SynthCacheSpec spec;
  spec.train = 256;
  spec.val = 64;
  spec.min_side = 160;
  spec.max_side = 320;
  spec.cache_imgsz = 128;
  const fs::path cache = MakeSynthCache(tmp.path(), spec);
  TrainOptions o = TinyRun(cache, tmp / "run");
  o.imgsz = 128;
  o.batch = 16;
  o.epochs = 20;       // close_mosaic 10: mosaic for 10 epochs, plain letterbox + affine for the last 10
  o.val_every = 5;
  o.log_every = 16;
  Result<TrainSummary> s = Train(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->epochs_completed, 20);
  ASSERT_TRUE(s->has_metrics);
  RecordProperty("mAP50", std::to_string(s->final_metrics.map50));
  std::cout << "final mAP50 " << s->final_metrics.map50 << " mAP50-95 " << s->final_metrics.map50_95 << " P "
            << s->final_metrics.precision << " R " << s->final_metrics.recall << " in " << s->wall_seconds << " s ("
            << s->images_per_second << " img/s)\n";
  EXPECT_GE(s->final_metrics.map50, 0.5);
  EXPECT_GT(s->final_metrics.map50_95, 0.2);

  // Ultralytics' run directory.
  EXPECT_TRUE(fs::exists(tmp / "run" / "weights" / "last.pt"));
  EXPECT_TRUE(fs::exists(tmp / "run" / "weights" / "best.pt"));
  EXPECT_TRUE(fs::exists(tmp / "run" / "args.yaml"));
  Result<std::vector<EpochRecord>> rows = ReadResultsCsv(tmp / "run" / "results.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 20u);
  int validated = 0;
  for (const EpochRecord& r : *rows) validated += r.validated ? 1 : 0;
  EXPECT_EQ(validated, 4);  // epochs 5, 10, 15, 20
  EXPECT_LT(rows->back().train_loss[0], rows->front().train_loss[0]);
  EXPECT_TRUE(rows->back().validated);
  EXPECT_NEAR(rows->back().map50, s->final_metrics.map50, 1e-5);
  if (std::string(ResultsPlotEncoder()) != "none") {
    EXPECT_TRUE(fs::exists(tmp / "run" / "results.png"));
  }
  // best.pt is the best validated epoch; the finished run cannot be resumed.
  auto best = CheckpointReader::Open(tmp / "run" / "weights" / "best.pt", at::Device(at::kCPU));
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*best)->meta().state.best_epoch, s->best_epoch);
  auto again = Train(o, TrainHooks{nullptr, nullptr, tmp / "run" / "weights" / "last.pt", {}});
  EXPECT_EQ(again.status().code(), Status::Code::kInvalidArgument);

  // Ultralytics' final_eval: a run's final figures are best.pt's. A 2-epoch fine-tune of this best.pt whose
  // second epoch is made worse on purpose (stopped after epoch 1, resumed with lr0 0.5): best.pt stays
  // epoch 1's and is validated again at the end, so the final metrics are epoch 1's (up to best.pt's fp16
  // rounding), not epoch 2's. It also resumes from the default (fp16, Ultralytics-sized) last.pt.
  TrainOptions tune = o;
  tune.out = (tmp / "tune").string();
  tune.weights = (tmp / "run" / "weights" / "best.pt").string();
  tune.epochs = 2;
  tune.val_every = 1;
  tune.optimizer = "SGD";
  tune.warmup_epochs = 0;
  std::atomic<bool> cancel{false};
  StopAt stopper(&cancel, 1, 0);
  Result<TrainSummary> first = Train(tune, TrainHooks{&stopper, &cancel, {}, {}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->interrupted);
  const fs::path tune_last = tmp / "tune" / "weights" / "last.pt";
  Result<TrainOptions> ro = ResumeOptions(tune_last);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_FALSE(ro->exact_resume);
  ro->lr0 = 0.5;
  cancel = false;
  Result<TrainSummary> second = Train(*ro, TrainHooks{nullptr, &cancel, tune_last, {}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  Result<std::vector<EpochRecord>> tuned = ReadResultsCsv(tmp / "tune" / "results.csv");
  ASSERT_TRUE(tuned.ok() && tuned->size() == 2u);
  const double fitness1 = 0.1 * (*tuned)[0].map50 + 0.9 * (*tuned)[0].map50_95;
  const double fitness2 = 0.1 * (*tuned)[1].map50 + 0.9 * (*tuned)[1].map50_95;
  ASSERT_GT(fitness1, fitness2 + 0.01) << "epoch 2 was meant to be worse";
  EXPECT_EQ(second->best_epoch, 1);
  EXPECT_NEAR(second->final_metrics.fitness, fitness1, 0.02 * fitness1);
}

class ResumeTest : public ::testing::TestWithParam<size_t> {};

// 2 epochs straight vs the same run stopped (at an epoch end, or inside an epoch with gradients still
// being accumulated) and resumed from last.pt: same weights, EMA, BatchNorm statistics, results.
TEST_P(ResumeTest, MatchesUninterruptedRun) {
  const size_t stop_batch = GetParam();
  TempDir tmp;
  SynthCacheSpec spec;
  spec.train = 20;  // 5 batches of 4 per epoch
  spec.val = 8;
  const fs::path cache = MakeSynthCache(tmp.path(), spec);
  TrainOptions o = TinyRun(cache, tmp / "straight");
  o.nbs = 8;              // accumulate 2 batches per optimizer step
  o.warmup_epochs = 0;    // (warmup would ramp accumulation; 0 keeps it at 2 from the start)
  o.optimizer = "SGD";    // momentum buffers and Nesterov: optimizer state that must survive
  o.seed = 7;
  o.save_every = 1;
  o.keep = 1;
  o.exact_resume = true;  // fp32 state in last.pt (the default fp16 form resumes from the EMA, as Ultralytics)

  Result<TrainSummary> straight = Train(o);
  ASSERT_TRUE(straight.ok()) << straight.status().ToString();
  ASSERT_EQ(straight->epochs_completed, 2);

  TrainOptions o2 = o;
  o2.out = (tmp / "resumed").string();
  std::atomic<bool> cancel{false};
  StopAt stopper(&cancel, 1, stop_batch);
  Result<TrainSummary> first = Train(o2, TrainHooks{&stopper, &cancel, {}, {}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->interrupted);
  const fs::path last = tmp / "resumed" / "weights" / "last.pt";
  {
    auto r = CheckpointReader::Open(last, at::Device(at::kCPU));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->meta().state.epoch, stop_batch == 0 ? 1 : 0);
    EXPECT_EQ((*r)->meta().state.next_batch, static_cast<int64_t>(stop_batch));
    EXPECT_FALSE((*r)->meta().state.finished);
    // Steps at ni 1 and 3: after 2 batches nothing is pending; after 3 batches, or at the epoch's end
    // (ni 4), one batch's gradients wait for the next step and must be saved.
    EXPECT_EQ((*r)->has_grads(), stop_batch != 2);
  }

  Result<TrainOptions> ro = ResumeOptions(last);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_EQ(ro->out, (tmp / "resumed").string());
  cancel = false;
  Result<TrainSummary> second = Train(*ro, TrainHooks{nullptr, &cancel, last, {}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(second->interrupted);
  EXPECT_EQ(second->epochs_completed, 2);

  // A finished run's last.pt is stripped (the EMA in fp16); its epoch2.pt keeps every tensor in full.
  const fs::path a = tmp / "straight" / "weights" / "epoch2.pt", b = tmp / "resumed" / "weights" / "epoch2.pt";
  EXPECT_LE(MaxAbsDiff(a, b, "model"), 1e-6);
  EXPECT_LE(MaxAbsDiff(a, b, "ema"), 1e-6);
  auto ra = CheckpointReader::Open(a, at::Device(at::kCPU));
  auto rb = CheckpointReader::Open(b, at::Device(at::kCPU));
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ((*ra)->meta().state.optimizer_steps, (*rb)->meta().state.optimizer_steps);
  EXPECT_EQ((*ra)->meta().state.ema_updates, (*rb)->meta().state.ema_updates);
  EXPECT_EQ((*ra)->meta().state.images_seen, (*rb)->meta().state.images_seen);
  EXPECT_TRUE((*rb)->meta().state.finished);

  // results.csv: same losses and metrics per epoch (times differ).
  auto ca = ReadResultsCsv(tmp / "straight" / "results.csv");
  auto cb = ReadResultsCsv(tmp / "resumed" / "results.csv");
  ASSERT_TRUE(ca.ok() && cb.ok());
  ASSERT_EQ(ca->size(), 2u);
  ASSERT_EQ(cb->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR((*ca)[i].train_loss[k], (*cb)[i].train_loss[k], 1e-4) << "epoch " << i + 1;
      EXPECT_NEAR((*ca)[i].val_loss[k], (*cb)[i].val_loss[k], 1e-4) << "epoch " << i + 1;
      EXPECT_DOUBLE_EQ((*ca)[i].lr[k], (*cb)[i].lr[k]);
    }
    EXPECT_NEAR((*ca)[i].map50, (*cb)[i].map50, 1e-6);
  }
  // save_every 1 with keep 1: only the newest epochN.pt is left.
  EXPECT_TRUE(fs::exists(tmp / "straight" / "weights" / "epoch2.pt"));
  EXPECT_FALSE(fs::exists(tmp / "straight" / "weights" / "epoch1.pt"));
}

INSTANTIATE_TEST_SUITE_P(AtEpochEndOrInside, ResumeTest, ::testing::Values(size_t{0}, size_t{2}, size_t{3}),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           return i.param == 0 ? std::string("EpochEnd") : "Batch" + std::to_string(i.param);
                         });

// A run that diverges after it saved a checkpoint (here: resumed with --lr0 1e6 after a clean first
// epoch) stops with a DataError naming the epoch, batch and loss term; last.pt and best.pt keep the
// finite weights they held, byte for byte, and results.csv gains no row of NaN.
TEST(TrainLoop, DivergenceKeepsTheLastFiniteCheckpoints) {
  TempDir tmp;
  const fs::path cache = MakeSynthCache(tmp.path(), SynthCacheSpec{});
  TrainOptions o = TinyRun(cache, tmp / "run");
  o.epochs = 3;
  o.optimizer = "SGD";
  o.warmup_epochs = 0;
  o.nbs = 4;
  std::atomic<bool> cancel{false};
  StopAt stopper(&cancel, 1, 0);
  Result<TrainSummary> first = Train(o, TrainHooks{&stopper, &cancel, {}, {}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->interrupted);
  const fs::path last = tmp / "run" / "weights" / "last.pt", best = tmp / "run" / "weights" / "best.pt";
  ASSERT_TRUE(fs::exists(best));

  Result<TrainOptions> ro = ResumeOptions(last);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  ro->lr0 = 1e6;
  cancel = false;
  Result<TrainSummary> second = Train(*ro, TrainHooks{nullptr, &cancel, last, {}});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kDataError);
  const std::string& msg = second.status().message();
  EXPECT_NE(msg.find("training diverged: non-finite"), std::string::npos) << msg;
  EXPECT_NE(msg.find("epoch "), std::string::npos) << msg;  // epoch 2 or 3: where lr 1e6 first overflows
  // Whichever epoch lr 1e6 first overflows in (it may finish epoch 2 with finite weights and save them),
  // last.pt and best.pt hold the last good epoch's finite weights: BuildInferenceModel refuses NaN/inf.
  for (const fs::path& saved : {last, best}) {
    auto reader = CheckpointReader::Open(saved, at::Device(at::kCPU));
    ASSERT_TRUE(reader.ok()) << saved;
    Result<DetectionModel> m = (*reader)->BuildInferenceModel(at::Device(at::kCPU));
    EXPECT_TRUE(m.ok()) << saved << ": " << m.status().ToString();
  }
  auto rows = ReadResultsCsv(tmp / "run" / "results.csv");
  ASSERT_TRUE(rows.ok());
  EXPECT_GE(rows->size(), 1u);  // no row for the diverged epoch: at most the two before the third
  EXPECT_LE(rows->size(), 2u);
}

TEST(TrainLoop, RefusesToOverwriteARunAndBadOptions) {
  TempDir tmp;
  const fs::path cache = MakeSynthCache(tmp.path(), SynthCacheSpec{});
  TrainOptions o = TinyRun(cache, tmp / "run");
  o.epochs = 1;
  o.val = false;
  Result<TrainSummary> s = Train(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Nothing validated: best.pt holds the final EMA, in the release form.
  ASSERT_FALSE(s->best.empty());
  auto best = CheckpointReader::Open(s->best, at::Device(at::kCPU));
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_TRUE((*best)->is_release());
  EXPECT_FALSE(s->has_metrics);
  Result<TrainSummary> again = Train(o);
  EXPECT_EQ(again.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(again.status().message().find("--resume"), std::string::npos) << again.status().message();
  o.exist_ok = true;
  o.imgsz = 100;  // not a multiple of 32
  EXPECT_EQ(Train(o).status().code(), Status::Code::kInvalidArgument);
  o.imgsz = 100000 / 32 * 32;  // a multiple of 32, but beyond the 8192 every command accepts
  EXPECT_EQ(Train(o).status().code(), Status::Code::kInvalidArgument);
  o.imgsz = 64;
  o.data = (tmp / "no-such-cache").string();
  EXPECT_FALSE(Train(o).ok());
  o.data = cache.string();
  o.device = "cuda:0";
  if (!CudaAvailable()) {
    EXPECT_EQ(Train(o).status().code(), Status::Code::kInvalidArgument);
  }
}

TEST(EarlyStopping, PatienceCountsEpochsSinceTheBest) {
  EarlyStopping s(3);
  EXPECT_FALSE(s.Update(1, 0.0));  // any fitness replaces a best of 0 (Ultralytics)
  EXPECT_TRUE(s.improved());
  EXPECT_FALSE(s.Update(2, 0.2));
  EXPECT_EQ(s.best_epoch(), 2);
  EXPECT_FALSE(s.Update(3, 0.1));
  EXPECT_FALSE(s.improved());
  EXPECT_FALSE(s.Update(4, 0.2));  // equal is not better
  EXPECT_TRUE(s.Update(5, 0.15));  // 5 - 2 >= 3
  EarlyStopping never(0);
  for (int e = 1; e < 50; ++e) EXPECT_FALSE(never.Update(e, 0.5));
  EarlyStopping resumed(2, 0.4, 7);  // state from a checkpoint
  EXPECT_FALSE(resumed.Update(8, 0.3));
  EXPECT_TRUE(resumed.Update(9, 0.3));
}

}  // namespace
}  // namespace yc::trainer
