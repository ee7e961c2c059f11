// `yolocache-train` as a user runs it: --help everywhere, a short training run, `val --json`, `predict`
// writing JPEGs, exit codes for usage errors and missing files; a diverging run, NaN weights, a FIFO
// among the images and SIGHUP.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/cache_checkpoint.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/io/checkpoint.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

using testing::YolocacheTrain;

// An untrained yolov8n checkpoint for the cache's classes (inference at imgsz 64); `poison`: one weight
// NaN, as a diverged run would have left it.
fs::path WriteUntrainedCheckpoint(const fs::path& cache, const fs::path& path, bool poison) {
  if (!poison) return testutil::WriteCacheCheckpoint(cache, path);
  return testutil::WriteCacheCheckpoint(cache, path, [](DetectionModelImpl& model) {
    model.parameters()[5].view({-1})[0] = std::nan("");
  });
}

// Whether `file` has any content yet, polled up to `limit`.
bool WaitForOutput(const fs::path& file, const std::string& needle, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(file) && testing::ReadFile(file).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int WaitExit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(TrainCli, HelpForEverySubcommand) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"train",
       {"--data", "--model", "--epochs", "--batch", "--imgsz", "--device", "--amp", "--no-amp", "--threads", "--optimizer",
        "--lr0", "--lrf", "--momentum", "--weight-decay", "--warmup-epochs", "--cos-lr", "--close-mosaic", "--val-every",
        "--save-every", "--keep", "--patience", "--seed", "--resume", "--out", "--mosaic", "--degrees", "--translate",
        "--scale", "--shear", "--perspective", "--hsv-h", "--hsv-s", "--hsv-v", "--flipud", "--fliplr", "--mixup",
        "--synthetic-input", "--sync-bn", "--no-fused-optimizer"}},
      {"ceiling", {"--model", "--batch", "--imgsz", "--data", "--nc", "--synthetic-iters", "--json"}},
      {"val", {"--weights", "--data", "--json", "--conf", "--iou"}},
      {"predict", {"--weights", "--out", "--conf", "--json"}}};
  for (const auto& [cmd, flags] : expected) {
    CliRun r = YolocacheTrain(tmp, {cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    for (const std::string& f : flags) EXPECT_NE(r.out.find(f), std::string::npos) << cmd << " lacks " << f;
  }
  EXPECT_EQ(YolocacheTrain(tmp, {"--help"}).exit_code, 0);
  // ceiling measures one step: the options of a training run (validation, checkpoints, run folder) are not its.
  const CliRun c = YolocacheTrain(tmp, {"ceiling", "--help"});
  for (const char* f : {"--val-every", "--no-val", "--save-every", "--patience", "--resume", "--out", "--project",
                        "--exist-ok", "--no-plots"}) {
    EXPECT_EQ(c.out.find(std::string(f) + " "), std::string::npos) << "ceiling lists " << f;
  }
}

TEST(TrainCli, UsageErrorsAndMissingFiles) {
  TempDir tmp;
  EXPECT_EQ(YolocacheTrain(tmp, {}).exit_code, 2);
  EXPECT_EQ(YolocacheTrain(tmp, {"train"}).exit_code, 2);  // no --data
  EXPECT_EQ(YolocacheTrain(tmp, {"train", "--data", "x", "--epochs", "zero"}).exit_code, 2);
  CliRun r = YolocacheTrain(tmp, {"train", "--data", (tmp / "missing").string(), "--out", (tmp / "run").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  r = YolocacheTrain(tmp, {"val", "--weights", (tmp / "none.pt").string(), "--data", (tmp / "c").string(), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("none.pt"), std::string::npos) << r.err;
}

// `ceiling`: the model's own step throughput on random images, with the label tables of real batches when
// given a cache.
TEST(TrainCli, CeilingJson) {
  TempDir tmp;
  const testutil::SynthCacheSpec spec = testutil::Images(8, 2);
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const std::vector<std::string> common{"--model", "yolov8n", "--imgsz", "64", "--batch", "2", "--device", "cpu",
                                        "--synthetic-iters", "2", "--torch-threads", "1", "--json"};
  std::vector<std::string> with_data{"ceiling", "--data", cache.string()};
  with_data.insert(with_data.end(), common.begin(), common.end());
  CliRun r = YolocacheTrain(tmp, with_data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_GT(j["images_per_second"].get<double>(), 0.0);
  EXPECT_EQ(j["label_tables"], 4);  // 8 images / batch 2: every batch of the epoch, at most 8
  EXPECT_EQ(j["nc"], spec.classes);
  EXPECT_EQ(j["batch"], 2);
  EXPECT_FALSE(j.contains("profile"));

  // --profile: the step's five parts, the assigner timed apart from the rest of the loss. (Batch 2
  // accumulates gradients for 32 batches, so these two iterations never reach an optimizer step.)
  with_data.push_back("--profile");
  r = YolocacheTrain(tmp, with_data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.contains("profile")) << r.out;
  double parts = 0;
  for (const char* part : {"forward_ms", "loss_ms", "assigner_ms", "backward_ms", "optimizer_ms"}) {
    ASSERT_TRUE(j["profile"].contains(part)) << part << " in " << j["profile"].dump();
    if (std::string(part) != "optimizer_ms") {
      EXPECT_GT(j["profile"][part].get<double>(), 0.0) << part;
    }
    parts += j["profile"][part].get<double>();
  }
  EXPECT_NEAR(j["profile"]["sum_ms"].get<double>(), parts, 1e-6 * parts);

  std::vector<std::string> random{"ceiling", "--nc", "5"};
  random.insert(random.end(), common.begin(), common.end());
  r = YolocacheTrain(tmp, random);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["label_tables"], 0);
  EXPECT_EQ(j["nc"], 5);
  EXPECT_EQ(j["conv_warmup"], "");  // not asked for
  random.insert(random.end(), {"--conv-warmup", "2"});
  r = YolocacheTrain(tmp, random);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["conv_warmup"], "conv warm-up: none (not CUDA)");
  EXPECT_EQ(YolocacheTrain(tmp, {"ceiling", "--nc", "0"}).exit_code, 2);
}

TEST(TrainCli, TrainThenValJsonThenPredict) {
  TempDir tmp;
  const testutil::SynthCacheSpec spec = testutil::Images(12, 6);
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const fs::path run = tmp / "run";
  CliRun t = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--model", "yolov8n", "--imgsz", "64", "--epochs",
                                  "1", "--batch", "4", "--device", "cpu", "--threads", "1", "--torch-threads", "1",
                                  "--out", run.string()});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("epoch 1:"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("img/s"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("GPU busy: n/a"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("between epochs:"), std::string::npos) << t.out;  // validation + checkpoint time
  EXPECT_NE(t.out.find("(validation: data "), std::string::npos) << t.out;  // ... and their parts
  EXPECT_NE(t.out.find("; checkpoints: snapshots "), std::string::npos) << t.out;
  ASSERT_TRUE(fs::exists(run / "weights" / "best.pt"));
  EXPECT_TRUE(fs::exists(run / "results.csv"));

  // A second run into the same directory is refused (exit 2) unless resumed or --exist-ok.
  CliRun again = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--imgsz", "64", "--epochs", "1", "--device",
                                      "cpu", "--out", run.string()});
  EXPECT_EQ(again.exit_code, 2) << again.err;

  CliRun v = YolocacheTrain(tmp, {"val", "--weights", (run / "weights" / "best.pt").string(), "--data", cache.string(),
                                  "--device", "cpu", "--threads", "1", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  nlohmann::json j = nlohmann::json::parse(v.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << v.out;
  for (const char* key : {"precision", "recall", "mAP50", "mAP50-95", "fitness", "per_class", "loss", "imgsz"}) {
    EXPECT_TRUE(j.contains(key)) << key << " in " << v.out;
  }
  EXPECT_EQ(j["images"], 6);
  EXPECT_EQ(j["imgsz"], 64);
  EXPECT_GE(j["mAP50"].get<double>(), 0.0);
  EXPECT_LE(j["mAP50"].get<double>(), 1.0);

  // best.pt is the release form (EMA only, fp16): val read it above; it cannot be resumed (last.pt can).
  CliRun r = YolocacheTrain(tmp, {"train", "--resume", (run / "weights" / "best.pt").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("release weights"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("last.pt"), std::string::npos) << r.err;
  // The finished run's last.pt is stripped too (Ultralytics' strip_optimizer): the same release form.
  EXPECT_LT(fs::file_size(run / "weights" / "best.pt"), fs::file_size(run / "weights" / "last.pt") * 11 / 10);
  EXPECT_GT(fs::file_size(run / "weights" / "best.pt"), fs::file_size(run / "weights" / "last.pt") * 9 / 10);

  // Predict on a directory of source images: one annotated JPEG each, detections as JSON.
  const fs::path images = tmp / "data" / "images" / "val";
  CliRun p = YolocacheTrain(tmp, {"predict", "--weights", (run / "weights" / "last.pt").string(), images.string(),
                                  "--out", (tmp / "pred").string(), "--device", "cpu", "--conf", "0.001", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json pj = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_TRUE(pj.is_array()) << p.out;
  ASSERT_EQ(pj.size(), 6u);
  for (const auto& item : pj) {
    const fs::path out = item["output"].get<std::string>();
    ASSERT_TRUE(fs::exists(out)) << out;
    const std::string bytes = testing::ReadFile(out);
    ASSERT_GT(bytes.size(), 100u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0xFF);  // JPEG SOI
    EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0xD8);
    EXPECT_GT(item["width"].get<int>(), 0);
    for (const auto& d : item["detections"]) {
      EXPECT_GE(d["confidence"].get<double>(), 0.001);
      const auto box = d["box"];
      EXPECT_LE(box[0].get<double>(), box[2].get<double>());
      EXPECT_LE(box[2].get<double>(), item["width"].get<double>());
    }
  }
  // A file that is not an image: reported, exit 1, the others still done.
  testing::WriteFile(tmp / "notimg" / "x.jpg", "not a jpeg");
  CliRun bad = YolocacheTrain(tmp, {"predict", "--weights", (run / "weights" / "last.pt").string(),
                                    (tmp / "notimg" / "x.jpg").string(), "--out", (tmp / "pred2").string(), "--device", "cpu"});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("x.jpg"), std::string::npos) << bad.err;
}

// --lr0 1e6 (issue 18): the losses turn NaN within the first epoch. The run stops with exit 1 naming the
// epoch, batch and loss term, and neither best.pt nor last.pt is written from the diverged weights.
// The windowed order through the CLI, its windows read with O_DIRECT by the window stage and through
// the page cache: the run says which, and both train on the same batches (the same losses to the
// last printed digit). A bad --window-io is a usage error.
TEST(TrainCli, WindowedOrderTrainsTheSameAroundAndThroughThePageCache) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(16, 4));
  std::vector<std::string> losses;
  for (const char* io : {"direct", "page-cache"}) {
    const fs::path run = tmp / (std::string("run-") + io);
    CliRun t = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--model", "yolov8n", "--imgsz", "64", "--epochs",
                                    "2", "--batch", "4", "--device", "cpu", "--threads", "2", "--torch-threads", "1",
                                    "--no-val", "--no-plots", "--order", "windowed", "--window", "1", "--window-io", io,
                                    "--out", run.string()});
    ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
    EXPECT_NE(t.out.find("order: windowed, window 1 MiB"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find(std::string(io) == "direct" ? "windows: read with O_DIRECT" : "windows: read through the page cache"),
              std::string::npos)
        << t.out;
    std::string csv = testing::ReadFile(run / "results.csv");
    std::string rows;  // every row's losses, without the time column
    std::istringstream lines(csv);
    for (std::string line; std::getline(lines, line);) {
      const size_t a = line.find(','), b = line.find(',', a + 1);
      ASSERT_NE(b, std::string::npos) << csv;
      rows += line.substr(0, a) + line.substr(b) + "\n";
    }
    losses.push_back(rows);
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(YolocacheTrain(tmp, {"train", "--data", cache.string(), "--window-io", "mmap"}).exit_code, 2);
}

TEST(TrainCli, DivergingRunStopsWithExitOneAndSavesNoNonFiniteWeights) {
  TempDir tmp;
  testutil::SynthCacheSpec spec = testutil::Images(16, 8);
  spec.max_side = 160;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const fs::path run = tmp / "runs_nan";
  CliRun t = YolocacheTrain(tmp, {"train", "--data", cache.string(), "--device", "cpu", "--imgsz", "64", "--batch", "4",
                                  "--epochs", "2", "--lr0", "1e6", "--optimizer", "SGD", "--warmup-epochs", "0", "--nbs",
                                  "4", "--threads", "1", "--torch-threads", "1", "--out", run.string()});
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
  EXPECT_NE(t.err.find("training diverged: non-finite"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("epoch 1/2"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("--lr0"), std::string::npos) << t.err;
  EXPECT_FALSE(fs::exists(run / "weights" / "best.pt"));
  // The first epoch diverged: nothing finite to keep, so no last.pt either (had one been written
  // earlier, it would hold the weights from before the NaN: val must accept it).
  if (fs::exists(run / "weights" / "last.pt")) {
    CliRun v = YolocacheTrain(tmp, {"val", "--weights", (run / "weights" / "last.pt").string(), "--data",
                                    cache.string(), "--device", "cpu", "--threads", "1", "--json"});
    EXPECT_EQ(v.exit_code, 0) << v.err;
  }
}

// Weights with a NaN (a diverged run's, or a damaged file's): val and predict refuse them with exit 1
// and say why, instead of printing metrics or boxes computed from NaN.
TEST(TrainCli, ValAndPredictRefuseNonFiniteWeights) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 4));
  const fs::path weights = WriteUntrainedCheckpoint(cache, tmp / "nan.pt", /*poison=*/true);
  CliRun v = YolocacheTrain(tmp, {"val", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu",
                                  "--threads", "1", "--json"});
  EXPECT_EQ(v.exit_code, 1) << v.err;
  EXPECT_NE(v.err.find("nan.pt"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("NaN or infinite"), std::string::npos) << v.err;
  EXPECT_EQ(v.out, "");
  CliRun p = YolocacheTrain(tmp, {"predict", "--weights", weights.string(), (tmp / "data" / "images" / "val").string(),
                                  "--out", (tmp / "pred").string(), "--device", "cpu"});
  EXPECT_EQ(p.exit_code, 1) << p.err;
  EXPECT_NE(p.err.find("NaN or infinite"), std::string::npos) << p.err;
  EXPECT_FALSE(fs::exists(tmp / "pred"));
}

// A FIFO among the inputs is refused at once (an ifstream would wait for a writer forever); the other
// images are still done, and the exit code says one input failed. A regression must not hang the suite:
// a writer opens the FIFO after 20 s, and a reader released that way reads nothing, so its message is
// "cannot decode", not the FIFO refusal checked below (no wall-clock bound: CI machines are busy).
TEST(TrainCli, PredictRefusesAFifoWithoutBlocking) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(4, 2));
  const fs::path weights = WriteUntrainedCheckpoint(cache, tmp / "w.pt", /*poison=*/false);
  const fs::path fifo = tmp / "pipe.jpg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::atomic<bool> done{false};
  std::thread unblock([&] {
    for (int i = 0; i < 2000 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done.load()) return;
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // releases a reader blocked in open()
    if (fd >= 0) ::close(fd);
  });
  CliRun p = YolocacheTrain(tmp, {"predict", "--weights", weights.string(), fifo.string(),
                                  (tmp / "data" / "images" / "val").string(), "--out", (tmp / "pred").string(),
                                  "--device", "cpu", "--json"});
  done = true;
  unblock.join();
  EXPECT_EQ(p.exit_code, 1) << p.err;
  EXPECT_NE(p.err.find("pipe.jpg"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("not a regular file (a FIFO)"), std::string::npos) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << p.out;
  EXPECT_EQ(j.size(), 2u);  // the two val images
}

// SIGHUP (a closed terminal) stops predict between images and train at the next batch, like Ctrl-C:
// exit 130; train leaves a resumable last.pt.
TEST(TrainCli, SighupStopsPredictAndTrainWithExit130) {
  TempDir tmp;
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), testutil::Images(8, 2));
  const fs::path weights = WriteUntrainedCheckpoint(cache, tmp / "w.pt", /*poison=*/false);
  // A bad first input reports on stderr at once (stdout is buffered): the signal lands inside the loop,
  // with hundreds of images to go.
  testing::WriteFile(tmp / "bad.jpg", "not a jpeg");
  const std::string image = (tmp / "data" / "images" / "val").string();
  std::vector<std::string> args{"predict", "--weights", weights.string(), (tmp / "bad.jpg").string()};
  for (const auto& e : fs::directory_iterator(image)) {
    for (int k = 0; k < 200; ++k) args.push_back(e.path().string());
  }
  args.insert(args.end(), {"--out", (tmp / "pred").string(), "--device", "cpu"});
  pid_t pid = testing::SpawnTool("yolocache-train", args, tmp / "p.out", tmp / "p.err");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForOutput(tmp / "p.err", "bad.jpg", std::chrono::seconds(60)));
  kill(pid, SIGHUP);
  EXPECT_EQ(WaitExit(pid), 130);
  EXPECT_NE(testing::ReadFile(tmp / "p.err").find("interrupted after"), std::string::npos);

  const fs::path run = tmp / "run";
  pid = testing::SpawnTool("yolocache-train",
                           {"train", "--data", cache.string(), "--device", "cpu", "--imgsz", "64", "--batch", "2",
                            "--epochs", "100", "--threads", "1", "--torch-threads", "1", "--no-val", "--out",
                            run.string()},
                           tmp / "t.out", tmp / "t.err");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForOutput(tmp / "t.out", "epoch 1:", std::chrono::seconds(120)));
  kill(pid, SIGHUP);
  EXPECT_EQ(WaitExit(pid), 130) << testing::ReadFile(tmp / "t.err");
  EXPECT_NE(testing::ReadFile(tmp / "t.out").find("--resume"), std::string::npos);
  EXPECT_TRUE(fs::exists(run / "weights" / "last.pt"));
}

}  // namespace
}  // namespace yc::trainer
