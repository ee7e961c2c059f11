// Knowledge distillation (train --teacher; trainer/loss/distill_loss.h, trainer/engine/teacher.h): the
// loss is zero where the student's outputs equal the teacher's and positive otherwise, with gradients
// for the student only; the teacher runs frozen (running statistics untouched) and returns the raw head
// outputs; a teacher of other classes is refused before any cache is built; a CLI run with a teacher
// writes results.csv's train/kd_loss and --resume reloads it; with weight 0 the run is the run without a
// teacher, loss for loss and weight for weight (the wiring changes nothing else).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "tests/trainer/cache_checkpoint.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/engine/results_log.h"
#include "trainer/engine/teacher.h"
#include "trainer/engine/trainer.h"
#include "trainer/io/checkpoint.h"
#include "trainer/loss/distill_loss.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;
using testing::YolocacheTrain;

using testing::Has;

constexpr int64_t kNc = 3, kRegMax = 16;

// Head outputs of a 64 x 64 batch of 2: levels 8 x 8, 4 x 4, 2 x 2.
std::vector<at::Tensor> RandomHead(uint64_t seed, bool grad) {
  at::manual_seed(seed);
  std::vector<at::Tensor> out;
  for (int64_t side : {8, 4, 2}) out.push_back(at::randn({2, 4 * kRegMax + kNc, side, side}).mul(3).requires_grad_(grad));
  return out;
}

DistillLoss Loss(double temperature = 2.0) {
  DistillOptions o;
  o.nc = kNc;
  o.reg_max = kRegMax;
  o.temperature = temperature;
  return DistillLoss(o);
}

TEST(DistillLoss, ZeroForEqualOutputsPositiveOtherwiseAndGradientsOnlyForTheStudent) {
  const DistillLoss loss = Loss();
  std::vector<at::Tensor> teacher = RandomHead(1, /*grad=*/true);  // grad on: the loss must still not reach it
  std::vector<at::Tensor> same;
  for (const auto& t : teacher) same.push_back(t.detach().clone().requires_grad_(true));
  Result<at::Tensor> zero = loss(same, teacher);
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_NEAR(zero->item<double>(), 0.0, 1e-5);

  std::vector<at::Tensor> student = RandomHead(2, /*grad=*/true);
  Result<at::Tensor> kd = loss(student, teacher);
  ASSERT_TRUE(kd.ok()) << kd.status().ToString();
  EXPECT_GT(kd->item<double>(), 0.01);
  kd->backward();
  for (size_t i = 0; i < student.size(); ++i) {
    ASSERT_TRUE(student[i].grad().defined()) << i;
    EXPECT_GT(student[i].grad().abs().sum().item<double>(), 0.0) << i;
    EXPECT_FALSE(teacher[i].grad().defined()) << "teacher level " << i << " received a gradient";
  }
  // Moving the student toward the teacher lowers the loss: halfway is below the start.
  std::vector<at::Tensor> halfway;
  for (size_t i = 0; i < student.size(); ++i) halfway.push_back((student[i].detach() + teacher[i].detach()) / 2);
  EXPECT_LT(loss(halfway, teacher)->item<double>(), kd->item<double>());
  // Temperature: another T gives another (still positive) value for the same pair.
  EXPECT_NE(Loss(1.0)(student, teacher)->item<double>(), kd->item<double>());
}

TEST(DistillLoss, RefusesOutputsThatDoNotPairUp) {
  const DistillLoss loss = Loss();
  std::vector<at::Tensor> teacher = RandomHead(1, false);
  std::vector<at::Tensor> fewer(teacher.begin(), teacher.begin() + 2);
  EXPECT_EQ(loss(fewer, teacher).status().code(), Status::Code::kInvalidArgument);
  std::vector<at::Tensor> other = teacher;
  other[1] = at::zeros({2, 4 * kRegMax + kNc + 1, 4, 4});  // another class count
  Result<at::Tensor> r = loss(other, teacher);
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(Has(r.status().message(), "level 1")) << r.status().message();
}

// The teacher: the raw head outputs of its eval-mode layers (the eval forward's feats), no gradients,
// BatchNorm statistics untouched however often it runs.
TEST(Teacher, RunsFrozenAndReturnsTheEvalModeHeadOutputs) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(2, 1));
  at::manual_seed(3);
  const fs::path file = testutil::WriteCacheCheckpoint(cache, tmp / "t.pt", [](DetectionModelImpl& m) {
    for (auto& b : m.named_buffers()) {  // non-trivial running statistics, so eval and train forwards differ
      if (b.key().find("running_var") != std::string::npos) b.value().uniform_(0.5, 2.0);
      if (b.key().find("running_mean") != std::string::npos) b.value().uniform_(-0.2, 0.2);
    }
  });
  const int64_t nc = testutil::SynthCacheSpec().classes;
  Result<std::unique_ptr<Teacher>> teacher = Teacher::Load(file, nc, at::Device(at::kCPU), false);
  ASSERT_TRUE(teacher.ok()) << teacher.status().ToString();
  Result<InferenceModel> reference = LoadInferenceModel(file, at::Device(at::kCPU));
  ASSERT_TRUE(reference.ok());

  at::manual_seed(4);
  const at::Tensor x = at::rand({2, 3, 64, 64});
  const std::vector<at::Tensor> feats = (*teacher)->Forward(x);
  (*teacher)->Forward(x);  // a second run: statistics would move here if BatchNorm were in train mode
  const std::vector<at::Tensor> again = (*teacher)->Forward(x);
  std::vector<at::Tensor> expected;
  {
    c10::NoGradGuard no_grad;
    expected = reference->model->forward(x).feats;
  }
  ASSERT_EQ(feats.size(), 3u);
  for (size_t i = 0; i < feats.size(); ++i) {
    EXPECT_FALSE(feats[i].requires_grad());
    EXPECT_TRUE(at::equal(feats[i], again[i])) << i;
    EXPECT_TRUE(at::allclose(feats[i], expected[i], 1e-5, 1e-5)) << i;
  }
  ModelOptions student_options(ModelFamily::k11, ModelScale::kN, nc);  // another family pairs up too
  DetectionModel student(student_options);
  EXPECT_TRUE((*teacher)->CheckPairsWith(*student).ok());

  Result<std::unique_ptr<Teacher>> other = Teacher::Load(file, nc + 1, at::Device(at::kCPU), false);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(Has(other.status().message(), "t.pt")) << other.status().message();
}

std::vector<std::string> Cpu(std::vector<std::string> args) {
  for (const char* a : {"--device", "cpu", "--threads", "1", "--torch-threads", "1", "--imgsz", "64", "--batch", "4",
                        "--no-plots"})
    args.push_back(a);
  return args;
}

// A teacher of other classes is a usage error naming both counts and the file, found before the data
// YAML is cached; a missing or damaged teacher is exit 3 naming it; --distill-* without --teacher exit 2.
TEST(DistillCli, RefusesAMismatchedOrUnreadableTeacherBeforeBuildingTheCache) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(2, 1));  // 4 classes
  CheckpointMeta meta;
  meta.model_scale = "n";
  meta.nc = 3;
  meta.names = {"a", "b", "c"};
  meta.options.imgsz = 64;
  DetectionModel three(ModelOptions(ModelFamily::kV8, ModelScale::kN, 3));
  CheckpointContents c;
  c.meta = meta;
  c.model = three.get();
  ASSERT_TRUE(WriteCheckpoint(tmp / "three.pt", c).ok());

  const fs::path yaml = tmp / "data" / "data.yaml", caches = tmp / "caches";
  CliRun r = YolocacheTrain(tmp, Cpu({"train", "--data", yaml.string(), "--cache-dir", caches.string(), "--teacher",
                                      (tmp / "three.pt").string(), "--out", (tmp / "run").string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "three.pt")) << r.err;
  EXPECT_TRUE(Has(r.err, "nc=3")) << r.err;
  EXPECT_TRUE(Has(r.err, "nc=4")) << r.err;
  EXPECT_FALSE(fs::exists(caches)) << "a cache was built for a refused run";
  EXPECT_FALSE(fs::exists(tmp / "run"));
  // The same through key=value, on a built cache, with single_cls (1 class) against a 4-class teacher.
  const fs::path four = testutil::WriteCacheCheckpoint(cache, tmp / "four.pt");
  r = YolocacheTrain(tmp, {"train", "data=" + cache.string(), "teacher=" + four.string(), "single_cls=True",
                           "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "nc=1")) << r.err;

  r = YolocacheTrain(tmp, Cpu({"train", "--data", yaml.string(), "--cache-dir", caches.string(), "--teacher",
                               (tmp / "missing.pt").string()}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "missing.pt")) << r.err;
  testing::WriteFile(tmp / "junk.pt", "not a checkpoint");
  r = YolocacheTrain(tmp, Cpu({"train", "--data", yaml.string(), "--cache-dir", caches.string(), "--teacher",
                               (tmp / "junk.pt").string()}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "junk.pt")) << r.err;
  EXPECT_FALSE(fs::exists(caches));

  r = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--distill-weight", "2", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "--teacher")) << r.err;
  r = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--teacher", four.string(), "--distill-temp", "0",
                           "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // A good one: args.yaml records the teacher (absolute) and its settings; distill= sets the weight.
  r = YolocacheTrain(tmp, {"train", "data=" + cache.string(), "teacher=" + four.string(), "distill=0.5", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "\nteacher: " + four.string() + "\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "\ndistill: 0.5\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "\ndistill_temp: 2.0\n")) << r.out;
  r = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Has(r.out, "teacher:")) << r.out;
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The teacher is a 1-epoch run's last.pt; the student trains 2 epochs with it (epoch1.pt kept), writing
// train/kd_loss and the kd progress; --resume from epoch1.pt reloads the teacher and keeps the column.
TEST(DistillCli, TrainsWithATeacherWritesTheKdColumnAndResumes) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(8, 4));
  const fs::path teacher_run = tmp / "teacher";
  CliRun r = YolocacheTrain(tmp, Cpu({"train", "--data", cache.string(), "--epochs", "1", "--no-val", "--out",
                                      teacher_run.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path teacher = teacher_run / "weights" / "last.pt";
  ASSERT_TRUE(fs::exists(teacher));

  const fs::path run = tmp / "student";
  r = YolocacheTrain(tmp, Cpu({"train", "--data", cache.string(), "--model", "yolo11n", "--epochs", "2", "--save-every",
                               "1", "--teacher", teacher.string(), "--out", run.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "teacher: yolov8n")) << r.out;
  EXPECT_TRUE(Has(r.out, " kd ")) << r.out;  // the epoch lines show the term
  Result<std::vector<EpochRecord>> rows = ReadResultsCsv(run / "results.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  for (const EpochRecord& e : *rows) {
    EXPECT_TRUE(e.has_kd);
    EXPECT_GT(e.kd_loss, 0.0);
  }
  const std::string csv = ReadText(run / "results.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), ResultsCsvHeader(true));
  EXPECT_TRUE(Has(ReadText(run / "args.yaml"), "\nteacher: " + fs::absolute(teacher).string() + "\n"));
  // A run without a teacher keeps Ultralytics' 15 columns.
  const std::string plain = ReadText(teacher_run / "results.csv");
  EXPECT_EQ(plain.substr(0, plain.find('\n')), ResultsCsvHeader(false));

  r = YolocacheTrain(tmp, Cpu({"train", "--resume", (run / "weights" / "epoch1.pt").string(), "--out",
                               (tmp / "resumed").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "teacher: yolov8n")) << r.out;
  rows = ReadResultsCsv(tmp / "resumed" / "results.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_FALSE(rows->empty());
  EXPECT_TRUE(rows->back().has_kd);
  EXPECT_EQ(rows->back().epoch, 2);
  EXPECT_GT(rows->back().kd_loss, 0.0);
}

// With weight 0 the teacher runs and its term is logged, but training is the run without it: the same
// losses every epoch and the same final weights (deterministic CPU, same seed). Weight 1 changes them.
TEST(Distill, ZeroWeightTrainsExactlyAsWithoutTeacher) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(8, 4));
  at::manual_seed(11);
  const fs::path teacher = testutil::WriteCacheCheckpoint(cache, tmp / "teacher.pt");
  auto run = [&](const std::string& name, const std::string& teacher_path, double weight) {
    TrainOptions o = testutil::TinyRun(cache, tmp / name);
    o.seed = 5;
    o.plots = false;
    o.val = false;
    o.teacher = teacher_path;
    o.distill = weight;
    Result<TrainSummary> s = Train(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    Result<std::vector<EpochRecord>> rows = ReadResultsCsv(tmp / name / "results.csv");
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : std::vector<EpochRecord>{};
  };
  const std::vector<EpochRecord> plain = run("plain", "", 1.0);
  const std::vector<EpochRecord> zero = run("zero", teacher.string(), 0.0);
  const std::vector<EpochRecord> one = run("one", teacher.string(), 1.0);
  ASSERT_EQ(plain.size(), 2u);
  ASSERT_EQ(zero.size(), 2u);
  ASSERT_EQ(one.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    for (int k = 0; k < 3; ++k) EXPECT_EQ(plain[e].train_loss[k], zero[e].train_loss[k]) << "epoch " << e + 1;
    EXPECT_FALSE(plain[e].has_kd);
    EXPECT_TRUE(zero[e].has_kd);
    EXPECT_EQ(zero[e].kd_loss, 0.0);  // weighted: 0 x kd
    EXPECT_GT(one[e].kd_loss, 0.0);
  }
  // The second epoch trains on weights the first epoch's kd term moved.
  EXPECT_NE(plain[1].train_loss, one[1].train_loss);

  auto weights = [](const fs::path& ckpt) {
    Result<InferenceModel> m = LoadInferenceModel(ckpt, at::Device(at::kCPU));
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    std::vector<at::Tensor> out;
    if (m.ok()) {
      for (const auto& p : m->model->parameters()) out.push_back(p.clone());
    }
    return out;
  };
  const std::vector<at::Tensor> a = weights(tmp / "plain" / "weights" / "last.pt");
  const std::vector<at::Tensor> b = weights(tmp / "zero" / "weights" / "last.pt");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "parameter " << i;
}

}  // namespace
}  // namespace yc::trainer
