// `yolocache-train` as a user runs it: --help everywhere, a short training run, `val --json`, `predict`
// writing JPEGs, exit codes for usage errors and missing files.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

CliRun YolocacheTrain(const TempDir& tmp, const std::vector<std::string>& args) {
  return testing::RunTool("yolocache-train", tmp.path(), args);
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

  std::vector<std::string> random{"ceiling", "--nc", "5"};
  random.insert(random.end(), common.begin(), common.end());
  r = YolocacheTrain(tmp, random);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["label_tables"], 0);
  EXPECT_EQ(j["nc"], 5);
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

}  // namespace
}  // namespace yc::trainer
