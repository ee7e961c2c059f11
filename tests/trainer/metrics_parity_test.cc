// Validation metrics against Ultralytics' own code (../shared/ultralytics, Debian's python3-torch; skipped
// with a message where absent):
//  * a fixed, seeded set of letterboxed predictions and labels: our mapping to the original image
//    (ToOriginalImage), matching and AP (DetectionMetrics) and ConfusionMatrix equal DetectionValidator's
//    update_metrics + DetMetrics and ConfusionMatrix.process_batch within 1e-6;
//  * a yolocache yolov8n and a yolo11n, each trained for 30 short CPU epochs on the synth set: `yolocache-train val --json` equals
//    Ultralytics' DetectionValidator on the same best.pt (loaded by Ultralytics' own attempt_load_one_weight)
//    and the same original val images within 2e-4, and its predictions.json (save_json) equals
//    Ultralytics' row for row.
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/eval/confusion_matrix.h"
#include "trainer/eval/metrics.h"
#include "trainer/eval/validator.h"
#include "trainer/io/pretrained.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct FixedImage {
  Batch batch;  // one image: size, labels and its SampleInfo (ratio_pad, original size)
  at::Tensor preds;  // (n, 6) letterboxed pixels
};

// Seeded images whose letterbox padding and scale differ, labels anywhere in the image (some touching
// the border), predictions jittered around them (some reaching into the padding), with wrong classes,
// duplicates, pure false positives and images without labels or predictions.
std::vector<FixedImage> MakeImages(int nc, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::vector<FixedImage> images;
  for (int k = 0; k < 40; ++k) {
    FixedImage im;
    SampleInfo s;
    s.orig_w = 60 + pick(200);
    s.orig_h = 60 + pick(200);
    const double r = std::min(160.0 / s.orig_w, 160.0 / s.orig_h);
    s.resized_w = static_cast<int>(std::lround(s.orig_w * r));
    s.resized_h = static_cast<int>(std::lround(s.orig_h * r));
    im.batch.width = (s.resized_w + 31) / 32 * 32 + 32 * pick(2);
    im.batch.height = (s.resized_h + 31) / 32 * 32;
    s.ratio_w = static_cast<float>(s.resized_w) / s.orig_w;
    s.ratio_h = static_cast<float>(s.resized_h) / s.orig_h;
    s.pad_w = static_cast<float>(std::lround((im.batch.width - s.resized_w) / 2.0 - 0.1));
    s.pad_h = static_cast<float>(std::lround((im.batch.height - s.resized_h) / 2.0 - 0.1));
    im.batch.size = 1;
    im.batch.samples.push_back(s);
    std::vector<float> preds;
    const int labels = k % 7 == 3 ? 0 : 1 + pick(6);
    for (int l = 0; l < labels; ++l) {
      const double w = uni(4, s.resized_w * 0.6), h = uni(4, s.resized_h * 0.6);
      const double x1 = l == 0 ? 0 : uni(0, s.resized_w - w), y1 = l == 1 ? s.resized_h - h : uni(0, s.resized_h - h);
      const double cx = s.pad_w + x1 + w / 2, cy = s.pad_h + y1 + h / 2;
      const int cls = pick(nc);
      im.batch.labels.insert(im.batch.labels.end(), {0.0f, static_cast<float>(cls), static_cast<float>(cx / im.batch.width),
                                                     static_cast<float>(cy / im.batch.height),
                                                     static_cast<float>(w / im.batch.width), static_cast<float>(h / im.batch.height)});
      for (int d = 0, n = pick(3); d < n; ++d) {
        const double j = uni(0.0, 0.25);  // jitter as a fraction of the box size: IoUs across the thresholds
        const double px1 = cx - w / 2 + uni(-j, j) * w - (d == 1 ? 3 : 0), py1 = cy - h / 2 + uni(-j, j) * h;
        const double px2 = cx + w / 2 + uni(-j, j) * w, py2 = cy + h / 2 + uni(-j, j) * h + (d == 1 ? 3 : 0);
        const int pcls = pick(5) == 0 ? pick(nc) : cls;
        preds.insert(preds.end(), {static_cast<float>(px1), static_cast<float>(py1), static_cast<float>(px2),
                                   static_cast<float>(py2), static_cast<float>(uni(0.001, 1.0)), static_cast<float>(pcls)});
      }
    }
    for (int f = 0, n = pick(3); f < n; ++f) {  // false positives anywhere, padding included
      const double x = uni(0, im.batch.width - 8), y = uni(0, im.batch.height - 8);
      preds.insert(preds.end(), {static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + uni(4, 40)),
                                 static_cast<float>(y + uni(4, 40)), static_cast<float>(uni(0.001, 0.6)),
                                 static_cast<float>(pick(nc))});
    }
    im.preds = at::from_blob(preds.data(), {static_cast<int64_t>(preds.size() / 6), 6}, at::kFloat).clone();
    images.push_back(std::move(im));
  }
  return images;
}

nlohmann::json ToJson(const std::vector<FixedImage>& images, int nc, double conf) {
  nlohmann::json list = nlohmann::json::array();
  for (const FixedImage& im : images) {
    const SampleInfo& s = im.batch.samples[0];
    nlohmann::json labels = nlohmann::json::array(), preds = nlohmann::json::array();
    for (size_t r = 0; r < im.batch.label_count(); ++r) {
      const float* row = im.batch.labels.data() + 6 * r;
      labels.push_back({row[1], row[2], row[3], row[4], row[5]});
    }
    auto p = im.preds.contiguous();
    for (int64_t i = 0; i < p.size(0); ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (int j = 0; j < 6; ++j) row.push_back(p[i][j].item<float>());
      preds.push_back(row);
    }
    list.push_back({{"imgsz", {im.batch.height, im.batch.width}},
                    {"ori_shape", {s.orig_h, s.orig_w}},
                    {"ratio_pad", {{s.ratio_h, s.ratio_w}, {s.pad_w, s.pad_h}}},
                    {"labels", labels},
                    {"preds", preds}});
  }
  return {{"nc", nc}, {"conf", conf}, {"images", list}};
}

TEST(MetricsParity, FixedPredictionsEqualUltralyticsMetrics) {
  const testing::UltralyticsFixture fx = testing::UltralyticsFixture::Find();
  if (!fx.available) GTEST_SKIP() << fx.why;
  TempDir tmp;
  constexpr int kNc = 4;
  const std::vector<FixedImage> images = MakeImages(kNc, 7);
  testing::WriteFile(tmp / "in.json", ToJson(images, kNc, 0.001).dump());
  ASSERT_EQ(fx.Run("ultralytics_metrics.py", {(tmp / "in.json").string(), (tmp / "out.json").string()}, tmp.path()), 0)
      << testing::ReadFile(tmp / "python.log");
  const nlohmann::json ref = nlohmann::json::parse(testing::ReadFile(tmp / "out.json"));

  DetectionMetrics metrics;
  ConfusionMatrix confusion(kNc, ConfusionMatrixConf(0.001));
  for (const FixedImage& im : images) {
    at::Tensor gt_boxes, gt_cls;
    BatchGroundTruth(im.batch, 0, &gt_boxes, &gt_cls);
    ToOriginalImage(im.batch.samples[0], gt_boxes);
    at::Tensor det = im.preds.clone();
    ToOriginalImage(im.batch.samples[0], det);
    metrics.Update(det, gt_boxes, gt_cls);
    confusion.Update(det, gt_boxes, gt_cls);
  }
  const MetricsSummary m = metrics.Compute();
  // The fixed set is neither trivial nor perfect: the comparison below could fail.
  EXPECT_GT(m.map50, 0.2);
  EXPECT_LT(m.map50_95, 0.9);
  EXPECT_NEAR(m.precision, ref["precision"].get<double>(), 1e-6);
  EXPECT_NEAR(m.recall, ref["recall"].get<double>(), 1e-6);
  EXPECT_NEAR(m.map50, ref["mAP50"].get<double>(), 1e-6);
  EXPECT_NEAR(m.map50_95, ref["mAP50-95"].get<double>(), 1e-6);
  EXPECT_NEAR(m.fitness, ref["fitness"].get<double>(), 1e-6);
  const auto& cm = ref["confusion"];
  ASSERT_EQ(cm.size(), static_cast<size_t>(kNc + 1));
  double total = 0;
  for (int p = 0; p <= kNc; ++p) {
    for (int t = 0; t <= kNc; ++t) {
      EXPECT_EQ(confusion.at(p, t), cm[p][t].get<double>()) << "confusion[" << p << "][" << t << "]";
      total += confusion.at(p, t);
    }
  }
  EXPECT_GT(total, 0);

  // Matching in letterboxed pixels (the old way) gives other figures on this set: the mapping matters.
  DetectionMetrics letterboxed;
  for (const FixedImage& im : images) {
    at::Tensor gt_boxes, gt_cls;
    BatchGroundTruth(im.batch, 0, &gt_boxes, &gt_cls);
    letterboxed.Update(im.preds, gt_boxes, gt_cls);
  }
  EXPECT_GT(std::abs(letterboxed.Compute().map50_95 - m.map50_95), 1e-6);
}

// Our predictions.json (val --save-json) against the one Ultralytics' DetectionValidator wrote with
// save_json=True: per image the same rows in the same (NMS) order, the same image_id and category_id,
// bbox and score equal up to one unit of their rounding (3 and 5 decimals).
void ExpectSamePredictionsJson(const fs::path& ours_file, const fs::path& theirs_file) {
  ASSERT_TRUE(fs::exists(ours_file)) << ours_file;
  ASSERT_TRUE(fs::exists(theirs_file)) << theirs_file;
  const nlohmann::json ours = nlohmann::json::parse(testing::ReadFile(ours_file));
  const nlohmann::json theirs = nlohmann::json::parse(testing::ReadFile(theirs_file));
  ASSERT_GT(theirs.size(), 0u);
  ASSERT_EQ(ours.size(), theirs.size());
  auto by_image = [](const nlohmann::json& rows) {
    std::map<std::string, std::vector<nlohmann::json>> out;
    for (const auto& r : rows) out[r["image_id"].dump()].push_back(r);
    return out;
  };
  const auto a = by_image(ours), b = by_image(theirs);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [image, rows] : b) {
    ASSERT_EQ(a.count(image), 1u) << image;
    const auto& mine = a.at(image);
    ASSERT_EQ(mine.size(), rows.size()) << image;
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(mine[i]["category_id"], rows[i]["category_id"]) << image << " row " << i;
      for (int k = 0; k < 4; ++k) {
        EXPECT_NEAR(mine[i]["bbox"][k].get<double>(), rows[i]["bbox"][k].get<double>(), 1.0001e-3) << image << " row " << i;
      }
      EXPECT_NEAR(mine[i]["score"].get<double>(), rows[i]["score"].get<double>(), 1.0001e-5) << image << " row " << i;
    }
  }
}

// `yolocache-train val --weights best.pt --data CACHE` against `yolo val model=best.pt data=data.yaml`
// (Ultralytics' DetectionValidator as Model.val runs it: rect batches, the model's imgsz, conf 0.001,
// fp32 on the CPU) on the same weights and the original images. Equal within 2e-4 (in practice ~1e-9)
// when both run rect batches; a DetectionValidator built directly defaults to rect=False (square
// batches), which gives other boxes: mAP50-95 0.0981 there vs 0.0865 with rect on one such model.
void ExpectValEqualsUltralyticsValidator(const char* model) {
  const testing::UltralyticsFixture fx = testing::UltralyticsFixture::Find();
  if (!fx.available) GTEST_SKIP() << fx.why;
  TempDir tmp;
  testutil::SynthCacheSpec spec = testutil::Images(16, 8);
  spec.cache_imgsz = 96;  // the images (64..96 px) are cached at their full size
  const fs::path cache = testutil::MakeSynthCache(tmp.path(), spec);
  const fs::path run = tmp / "run";
  // 120 optimizer steps (nbs = batch: no accumulation), no mosaic, no warmup: enough for mAP50 ~0.2 on the
  // val images in ~480 training images of CPU time (a random-init model finds nothing at conf 0.001; 18
  // epochs at lr0 0.003, or 30 at imgsz 64, still find nothing). ~45 s of one core, most of it training.
  testing::CliRun t = testing::RunTool(
      "yolocache-train", tmp.path(),
      {"train", "--data", cache.string(), "--model", model, "--imgsz", "96", "--epochs", "30", "--batch", "4",
       "--nbs", "4", "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--warmup-epochs", "0",
       "--optimizer", "AdamW", "--lr0", "0.002", "--mosaic", "0", "--val-every", "0", "--no-plots", "--out",
       run.string()});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  const fs::path weights = run / "weights" / "best.pt";
  // The defaults a user runs: no --imgsz (the checkpoint's 96), rect batches, conf 0.001, IoU 0.7.
  testing::CliRun v = testing::RunTool("yolocache-train", tmp.path(),
                                       {"val", "--weights", weights.string(), "--data", cache.string(), "--device", "cpu",
                                        "--threads", "1", "--batch", "16", "--no-plots", "--save-json", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const nlohmann::json ours = nlohmann::json::parse(v.out);

  // Ultralytics reads our best.pt itself (trainer/io/checkpoint.h: a torch.save file of its own layout).
  ASSERT_EQ(fx.Run("ultralytics_val.py", {weights.string(), (tmp / "data" / "data.yaml").string(),
                                          "96", "16", (tmp / "ref.json").string(), (tmp / "ref_json").string()},
                   tmp.path()),
            0)
      << testing::ReadFile(tmp / "python.log");
  const nlohmann::json ref = nlohmann::json::parse(testing::ReadFile(tmp / "ref.json"));
  // A model that found something: otherwise equal zeros would prove nothing.
  EXPECT_GT(ours["mAP50"].get<double>(), 0.05) << v.out;
  EXPECT_EQ(ours["images"].get<int>(), ref["images"].get<int>());
  EXPECT_EQ(ours["instances"].get<int>(), ref["instances"].get<int>());
  for (const char* key : {"precision", "recall", "mAP50", "mAP50-95", "fitness"}) {
    EXPECT_NEAR(ours[key].get<double>(), ref[key].get<double>(), 2e-4) << key << "\nours " << v.out << "\nultralytics " << ref.dump();
  }
  ExpectSamePredictionsJson(tmp / ours["predictions_json"].get<std::string>(), tmp / "ref_json" / "predictions.json");
}

TEST(MetricsParity, TrainedYolov8nValEqualsUltralyticsValidator) { ExpectValEqualsUltralyticsValidator("yolov8n"); }
TEST(MetricsParity, TrainedYolo11nValEqualsUltralyticsValidator) { ExpectValEqualsUltralyticsValidator("yolo11n"); }

}  // namespace
}  // namespace yc::trainer
