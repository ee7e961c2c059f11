// `yolocache-train prune` as a user runs it: a checkpoint in, a smaller one out (the input untouched), the
// before/after report, exit codes for bad criteria (2), bad files (3); then the pruned file through every
// command: val, predict, export (TorchScript, whose forward equals the pruned model's, and ONNX where the
// build has libonnx), a two-epoch CPU fine-tune with train --weights, and --resume of its epoch1.pt; and
// Ultralytics' own YOLO() opening the pruned file of both families with the same forward; and train
// --prune-at, the prune inside a run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/cache_checkpoint.h"
#include "tests/trainer/train_test_util.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/onnx/onnx_export.h"
#include "trainer/io/pretrained.h"
#include "trainer/io/torchscript_model.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;
using testing::YolocacheTrain;

using testing::Has;

// A yolov8n checkpoint for the cache's classes whose BatchNorm scales look sparsity-trained (spread over
// [0.01, 1]), so a ratio has channels to choose.
fs::path WriteSpreadCheckpoint(const fs::path& cache, const fs::path& path) {
  at::manual_seed(5);
  return testutil::WriteCacheCheckpoint(cache, path, [](DetectionModelImpl& model) {
    for (auto& p : model.named_parameters()) {
      if (p.key().find(".bn.weight") != std::string::npos) p.value().uniform_(0.01, 1.0);
    }
  });
}

// "Transferred K/N items": K == N.
bool TransferredAll(const std::string& out) {
  const size_t at = out.find("Transferred ");
  if (at == std::string::npos) return false;
  long long k = -1, n = -2;
  return std::sscanf(out.c_str() + at, "Transferred %lld/%lld", &k, &n) == 2 && k == n && k > 0;
}

std::vector<std::string> Cpu(std::vector<std::string> args) {
  for (const char* a : {"--device", "cpu", "--threads", "1"}) args.push_back(a);
  return args;
}

TEST(PruneCli, PrunesWithoutTouchingTheInputAndRefusesBadArguments) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(2, 1));
  const fs::path weights = WriteSpreadCheckpoint(cache, tmp / "w.pt");
  const std::string original = testing::ReadFile(weights);

  CliRun r = YolocacheTrain(tmp, {"prune", "--help"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* f : {"--weights", "--ratio", "--threshold", "--min-keep", "--multiple-of", "--out", "--json"}) {
    EXPECT_TRUE(Has(r.out, f)) << f;
  }

  r = YolocacheTrain(tmp, {"prune", "--weights", weights.string(), "--ratio", "0.3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["file"], (tmp / "w-pruned.pt").string());
  EXPECT_GT(j["removed_channels"].get<int64_t>(), 0);
  EXPECT_LT(j["after"]["parameters"].get<int64_t>(), j["before"]["parameters"].get<int64_t>());
  EXPECT_LT(j["after"]["gflops"].get<double>(), j["before"]["gflops"].get<double>());
  EXPECT_EQ(j["before"]["layers"].size(), 23u);
  EXPECT_FALSE(j["channels"].empty());
  EXPECT_EQ(j["multiple_of"], 8);
  for (const auto& [path, width] : j["channels"].items()) EXPECT_EQ(width.get<int64_t>() % 8, 0) << path;
  EXPECT_TRUE(fs::exists(tmp / "w-pruned.pt"));
  EXPECT_EQ(testing::ReadFile(weights), original);  // the input is never written

  // --gflops: the smallest ratio that removes that share of the GFLOPs.
  r = YolocacheTrain(tmp, {"prune", "--weights", weights.string(), "--gflops", "0.3", "--out", (tmp / "g.pt").string(),
                           "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json g = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(g.is_discarded()) << r.out;
  EXPECT_EQ(g["gflops_target"], 0.3);
  const double cut = 1 - g["after"]["gflops"].get<double>() / g["before"]["gflops"].get<double>();
  EXPECT_GE(cut, 0.3);
  EXPECT_LT(cut, 0.4) << "not the smallest ratio";
  EXPECT_GT(g["ratio"].get<double>(), 0);

  r = YolocacheTrain(tmp, {"prune", "--weights", weights.string(), "--threshold", "0.2", "--out", (tmp / "t.pt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "parameters: ")) << r.out;
  EXPECT_TRUE(Has(r.out, "GFLOPs at 640: ")) << r.out;
  EXPECT_TRUE(Has(r.out, "C2f")) << r.out;

  const std::vector<std::pair<std::vector<std::string>, std::string>> usage = {
      {{"--ratio", "0"}, "give one of --ratio R, --threshold T and --gflops G"},
      {{"--ratio", "1"}, "--ratio 1: must be in (0, 1)"},
      {{"--ratio", "1.5"}, "--ratio 1.5: must be in (0, 1)"},
      {{"--threshold", "-0.1"}, "--threshold -0.1: must be in (0, 1)"},
      {{"--ratio", "0.3", "--min-keep", "0"}, "--min-keep 0: must be in (0, 1]"},
      {{"--ratio", "0.3", "--multiple-of", "0"}, "--multiple-of"},
      {{"--gflops", "1"}, "--gflops 1: must be in (0, 1)"},
      {{"--gflops", "0.99"}, "of the GFLOPs can go (every output keeps --min-keep 0.1"},
      {{"--gflops", "0.3", "--threshold", "0.1"}, "excludes"},
      {{}, "give one of --ratio R, --threshold T and --gflops G"},
      {{"--ratio", "0.2", "--threshold", "0.1"}, "excludes"},
      {{"--ratio", "0.2", "--out", weights.string()}, "prune never overwrites them"},
  };
  for (const auto& [extra, message] : usage) {
    std::vector<std::string> args = {"prune", "--weights", weights.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    r = YolocacheTrain(tmp, args);
    EXPECT_EQ(r.exit_code, 2) << message << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, message)) << message << "\n" << r.err;
  }
  EXPECT_EQ(testing::ReadFile(weights), original);

  r = YolocacheTrain(tmp, {"prune", "--weights", (tmp / "missing.pt").string(), "--ratio", "0.3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "missing.pt")) << r.err;
  testing::WriteFile(tmp / "junk.pt", "not a checkpoint");
  r = YolocacheTrain(tmp, {"prune", "--weights", (tmp / "junk.pt").string(), "--ratio", "0.3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "junk.pt")) << r.err;
}

TEST(PruneCli, PrunedCheckpointRunsThroughValPredictExportTrainAndResume) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(16, 8));
  const fs::path weights = WriteSpreadCheckpoint(cache, tmp / "w.pt");
  const fs::path pruned = tmp / "pruned.pt";
  CliRun r = YolocacheTrain(tmp, {"prune", "--weights", weights.string(), "--ratio", "0.4", "--out", pruned.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = YolocacheTrain(tmp, Cpu({"val", "--weights", pruned.string(), "--data", cache.string(), "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out, nullptr, false)["images"], 8) << r.out;

  const fs::path images = tmp / "data" / "images" / "val";
  r = YolocacheTrain(tmp, {"predict", "--weights", pruned.string(), images.string(), "--out", (tmp / "pred").string(),
                           "--device", "cpu", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = YolocacheTrain(tmp, {"export", "--weights", pruned.string(), "--format", "torchscript"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(tmp / "pruned.torchscript"));
  {  // the export computes the pruned model's forward (fp16 weights in both, fp32 math)
    Result<InferenceModel> model = LoadInferenceModel(pruned, at::Device(at::kCPU));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    Result<TorchScriptModel> exported = LoadTorchScriptModel(tmp / "pruned.torchscript", at::Device(at::kCPU));
    ASSERT_TRUE(exported.ok()) << exported.status().ToString();
    at::manual_seed(6);
    const at::Tensor x = at::rand({1, 3, 64, 64});
    c10::NoGradGuard no_grad;
    const at::Tensor expected = model->model->forward(x).pred;
    const at::Tensor got = exported->Forward(x);
    ASSERT_EQ(got.sizes(), expected.sizes());
    EXPECT_TRUE(at::allclose(got, expected, 1e-4, 1e-4)) << (got - expected).abs().max().item<double>();
  }
  r = YolocacheTrain(tmp, {"predict", "--weights", (tmp / "pruned.torchscript").string(), images.string(), "--out",
                           (tmp / "pred_ts").string(), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (OnnxExportAvailable()) {
    r = YolocacheTrain(tmp, {"export", "--weights", pruned.string(), "--format", "onnx"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(tmp / "pruned.onnx"));
  }

  // Fine-tune: the pruned architecture trains (2 epochs, epoch1.pt kept to resume from), its checkpoints
  // keep it (val of the fine-tuned best.pt), and --resume rebuilds it.
  const fs::path run = tmp / "run";
  r = YolocacheTrain(tmp, Cpu({"train", "--weights", pruned.string(), "--data", cache.string(), "--imgsz", "64",
                               "--epochs", "2", "--batch", "4", "--torch-threads", "1", "--save-every", "1",
                               "--no-plots", "--out", run.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "convolutions cut)")) << r.out;
  EXPECT_TRUE(TransferredAll(r.out)) << r.out;  // every tensor fits the pruned architecture
  r = YolocacheTrain(tmp, Cpu({"val", "--weights", (run / "weights" / "best.pt").string(), "--data", cache.string()}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = YolocacheTrain(tmp, Cpu({"train", "--resume", (run / "weights" / "epoch1.pt").string(), "--out",
                               (tmp / "resumed").string(), "--torch-threads", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "convolutions cut)")) << r.out;
  EXPECT_TRUE(fs::exists(tmp / "resumed" / "weights" / "best.pt"));
}

// train --prune-at: one run of sparsity epochs, the prune, and the pruned model's epochs. Its best.pt is
// the pruned model; a run resumed from the last checkpoint before the prune (epoch2.pt, exact form)
// prunes the same channels and ends with the same results.csv, as does one resumed after it (epoch3.pt:
// the pruned architecture rebuilt from the recorded widths, sparsity off). Bad values are refused before
// any work.
TEST(PruneCli, PruneInsideARunTrainsThePrunedModelAndResumesExactly) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(16, 8));
  const fs::path run = tmp / "run";
  const std::vector<std::string> train = Cpu({"train", "--model", "yolov8n", "--data", cache.string(), "--imgsz", "64",
                                              "--epochs", "4", "--batch", "4", "--torch-threads", "1", "--sparsity",
                                              "0.05", "--prune-at", "2", "--prune-ratio", "0.3", "--save-every", "1",
                                              "exact_resume=True", "--no-plots"});
  std::vector<std::string> args = train;
  args.insert(args.end(), {"--out", run.string()});
  CliRun r = YolocacheTrain(tmp, args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "sparsity: 0.05")) << r.out;
  const size_t pruned_at = r.out.find("pruned after epoch 2 (--prune-ratio 0.3): ");
  ASSERT_NE(pruned_at, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("epoch 2:"), pruned_at);
  EXPECT_GT(r.out.find("epoch 3:"), pruned_at);
  Result<std::unique_ptr<CheckpointReader>> best = CheckpointReader::Open(run / "weights" / "best.pt", at::Device(at::kCPU));
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_FALSE((*best)->meta().options.channels.empty());
  EXPECT_GE((*best)->meta().state.best_epoch, 3);  // chosen among the pruned model's epochs
  const std::string results = testing::ReadFile(run / "results.csv");

  // Same rows: epoch, then the losses and metrics (column 2 is the time).
  auto rows = [](const std::string& csv) {
    std::vector<std::string> out;
    std::istringstream in(csv);
    for (std::string line; std::getline(in, line);) {
      const size_t a = line.find(','), b = line.find(',', a + 1);
      out.push_back(line.substr(0, a) + line.substr(b));
    }
    return out;
  };
  for (const char* from : {"epoch2.pt", "epoch3.pt"}) {
    const fs::path again = tmp / (std::string("again_") + from);
    fs::copy(run, again, fs::copy_options::recursive);
    fs::remove(again / "weights" / "last.pt");
    r = YolocacheTrain(tmp, Cpu({"train", "--resume", (again / "weights" / from).string(), "--torch-threads", "1"}));
    ASSERT_EQ(r.exit_code, 0) << from << "\n" << r.out << r.err;
    EXPECT_EQ(Has(r.out, "pruned after epoch 2"), std::string(from) == "epoch2.pt") << r.out;
    EXPECT_FALSE(Has(r.out, "sparsity: ")) << from << ": no penalty after the prune\n" << r.out;
    EXPECT_EQ(rows(testing::ReadFile(again / "results.csv")), rows(results)) << from;
  }

  const std::vector<std::pair<std::vector<std::string>, std::string>> usage = {
      {{"--prune-at", "2"}, "--prune-at 2 needs one of --prune-ratio R"},
      {{"--prune-at", "2", "--prune-ratio", "0.3", "--prune-gflops", "0.3"}, "--prune-at 2 needs one of --prune-ratio R"},
      {{"--prune-gflops", "0.3"}, "--prune-gflops needs --prune-at"},
      {{"--prune-at", "4", "--prune-ratio", "0.3"}, "--prune-at 4 must be below --epochs 4"},
      {{"--prune-ratio", "0.3"}, "--prune-ratio needs --prune-at"},
      {{"--prune-at", "2", "--prune-ratio", "1.5"}, "--prune-ratio 1.5: must be in (0, 1)"},
  };
  for (const auto& [extra, message] : usage) {
    std::vector<std::string> bad = Cpu({"train", "--model", "yolov8n", "--data", cache.string(), "--epochs", "4",
                                        "--out", (tmp / "refused").string()});
    bad.insert(bad.end(), extra.begin(), extra.end());
    r = YolocacheTrain(tmp, bad);
    EXPECT_EQ(r.exit_code, 2) << message << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, message)) << message << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp / "refused"));
}

void WriteFloats(const fs::path& path, const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kFloat).contiguous();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(c.data_ptr<float>()), c.numel() * 4);
}

// A checkpoint of `family` with spread BatchNorm scales, pruned by 40%, opened by Ultralytics: its forward
// (and after its fuse()) equals ours on the same fp16 weights, and it counts the parameters we count.
void UltralyticsOpensPruned(ModelFamily family) {
  const testing::UltralyticsFixture fx = testing::UltralyticsFixture::Find();
  if (!fx.available) GTEST_SKIP() << fx.why;
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  const fs::path weights = testutil::WriteCacheCheckpoint(cache, tmp / "w.pt", [](DetectionModelImpl& model) {
    at::manual_seed(5);
    for (auto& p : model.named_parameters()) {
      if (p.key().find(".bn.weight") != std::string::npos) p.value().uniform_(0.01, 1.0);
    }
  }, family);
  const fs::path pruned = tmp / "pruned.pt";
  CliRun r = YolocacheTrain(tmp, {"prune", "--weights", weights.string(), "--ratio", "0.4", "--out", pruned.string(),
                                  "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_GT(report.value("removed_channels", 0), 100) << r.out;  // a real cut, not a copy
  Result<InferenceModel> model = LoadInferenceModel(pruned, at::Device(at::kCPU));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  at::manual_seed(6);
  const at::Tensor x = at::rand({1, 3, 64, 64});
  at::Tensor pred;
  {
    c10::NoGradGuard no_grad;
    pred = model->model->forward(x).pred;
  }
  WriteFloats(tmp / "input.bin", x);
  WriteFloats(tmp / "pred.bin", pred);
  ASSERT_EQ(fx.Run("ultralytics_pruned.py", {pruned.string(), (tmp / "input.bin").string(), "1,3,64,64",
                                             (tmp / "pred.bin").string(), (tmp / "out.json").string()},
                   tmp.path()),
            0)
      << testing::ReadFile(tmp / "python.log");
  const nlohmann::json got = nlohmann::json::parse(testing::ReadFile(tmp / "out.json"));
  EXPECT_EQ(got["parameters"].get<int64_t>(), report["after"]["parameters"].get<int64_t>()) << got.dump();
  // fp32 on both sides over the same fp16 weights; boxes are in pixels (up to 64).
  EXPECT_LT(got["forward_max_diff"].get<double>(), 1e-3) << got.dump();
  EXPECT_LT(got["fused_max_diff"].get<double>(), 1e-3) << got.dump();
}

TEST(PruneCli, UltralyticsOpensAPrunedYolov8nWithTheSameForward) { UltralyticsOpensPruned(ModelFamily::kV8); }
TEST(PruneCli, UltralyticsOpensAPrunedYolo11nWithTheSameForward) { UltralyticsOpensPruned(ModelFamily::k11); }

}  // namespace
}  // namespace yc::trainer
