// What a run leaves on disk, as Ultralytics names and draws it: runs/ folders (--project/--name,
// train -> train2 -> train3, --exist-ok, --out as given), the same file names as a 1-epoch Ultralytics
// run of the same settings (fixtures/ultralytics_run.py), predict's outputs (names that never collide,
// --save-txt/--save-conf rows, confidences on the drawn labels, video files in and out), the pictures
// (labels.jpg, train_batch0-2.jpg, val_batch0_labels/_pred.jpg, results.png, Box PR/F1/P/R curves,
// confusion matrices): each written, non-empty, and decoding to its size; and exports that behave like
// Ultralytics': at the training imgsz, a TorchScript file naming no device, run by val and predict.
// predict's classes / agnostic_nms / half / save_crop / show_boxes / vid_stride / save_frames, val's
// save_json and both's augment against plain runs.
// One short training run is shared by the tests.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <torch/cuda.h>
#include <torch/script.h>
#if YOLOCACHE_TEST_VIDEOIO
#include <opencv2/videoio.hpp>
#endif

#include "libcache/source/decode.h"
#include "tests/test_support.h"
#include "tests/trainer/train_test_util.h"
#include "tests/trainer/ultralytics_fixture.h"
#include "trainer/config/run_dir.h"
#include "trainer/eval/crops.h"
#include "trainer/eval/predictor.h"
#include "trainer/eval/validator.h"
#include "trainer/io/exporter.h"
#include "trainer/plots/charts.h"
#include "trainer/plots/plot_canvas.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;

using testing::YolocacheTrain;

// (width, height) of a picture file, decoded as the trainer decodes images; (0, 0) when it does not decode.
cv::Size PictureSize(const fs::path& file) {
  const std::string bytes = testing::ReadFile(file);
  DecodedImage d = DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), DecodeOptions{});
  if (d.has_error() || d.rgb.empty()) return {0, 0};
  return d.rgb.size();
}

// Every file below `dir`, relative to it ("weights/best.pt").
std::set<std::string> FilesBelow(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) out.insert(it->path().lexically_relative(dir).string());
  }
  return out;
}

// One training run (1 epoch, 12 images, imgsz 64, CPU) in runs/detect/train below a temp directory,
// shared by every test of the suite.
class RunOutputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    cache_ = testutil::MakeSynthCache(tmp_->path(), testutil::Images(12, 6));
    train_ = YolocacheTrain(*tmp_, {"train", "--data", cache_.string(), "--model", "yolov8n", "--imgsz", "64", "--epochs", "1",
                          "--batch", "4", "--device", "cpu", "--threads", "1", "--torch-threads", "1"});
    files_ = FilesBelow(Run());  // before other tests add to the folder
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static fs::path Run() { return tmp_->path() / "runs" / "detect" / "train"; }
  static fs::path Weights() { return Run() / "weights" / "best.pt"; }
  // A path the tool printed, relative to its working directory (the temp directory).
  static fs::path Printed(const nlohmann::json& path) { return tmp_->path() / path.get<std::string>(); }

  static TempDir* tmp_;
  static fs::path cache_;
  static CliRun train_;
  static std::set<std::string> files_;  // the run folder's files right after training
};
TempDir* RunOutputs::tmp_ = nullptr;
fs::path RunOutputs::cache_;
CliRun RunOutputs::train_;
std::set<std::string> RunOutputs::files_;

TEST(RunDir, IncrementsLikeUltralytics) {
  TempDir tmp;
  const std::string project = (tmp / "runs" / "detect").string();
  for (const char* expected : {"train", "train2", "train3"}) {
    Result<fs::path> d = ResolveRunDir("", project, "train", false);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->filename().string(), expected);
    EXPECT_TRUE(fs::is_directory(*d));
  }
  Result<fs::path> reuse = ResolveRunDir("", project, "train", true);
  ASSERT_TRUE(reuse.ok());
  EXPECT_EQ(reuse->filename().string(), "train");
  // --out wins over --project/--name and is used as given, existing or not.
  Result<fs::path> out = ResolveRunDir((tmp / "mine").string(), project, "train", false);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, tmp / "mine");
  EXPECT_FALSE(ResolveRunDir("", project, "", false).ok());
  // A file where the directory would go is an I/O error naming it.
  testing::WriteFile(tmp / "file", "x");
  Result<fs::path> bad = ResolveRunDir("", (tmp / "file").string(), "train", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("file"), std::string::npos);
}

TEST_F(RunOutputs, TrainGoesToRunsDetectTrainThenTrain2AndSaysSo) {
  ASSERT_EQ(train_.exit_code, 0) << train_.out << train_.err;
  EXPECT_NE(train_.out.find("run directory: runs/detect/train\n"), std::string::npos) << train_.out;
  EXPECT_NE(train_.out.find("Results saved to runs/detect/train\n"), std::string::npos) << train_.out;
  ASSERT_TRUE(fs::exists(Weights()));
  const std::string args = testing::ReadFile(Run() / "args.yaml");
  EXPECT_NE(args.find("\nsave_dir: runs/detect/train\n"), std::string::npos) << args;  // --resume continues there
  EXPECT_FALSE(fs::exists(Run() / "args.json"));
  // The next run increments; --exist-ok reuses the name (a run without validation or plots: cheap).
  const std::vector<std::string> quick = {"train", "--data", cache_.string(), "--imgsz", "64", "--epochs", "1",
                                          "--batch", "4", "--device", "cpu", "--threads", "1", "--torch-threads",
                                          "1", "--no-val", "--no-plots", "--project", "other", "--name", "exp"};
  CliRun a = YolocacheTrain(*tmp_, quick);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  CliRun b = YolocacheTrain(*tmp_, quick);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("run directory: other/exp2"), std::string::npos) << b.out;
  EXPECT_TRUE(fs::exists(tmp_->path() / "other" / "exp2" / "weights" / "last.pt"));
  EXPECT_FALSE(fs::exists(tmp_->path() / "other" / "exp2" / "results.png"));  // --no-plots
  std::vector<std::string> reuse = quick;
  reuse.push_back("--exist-ok");
  CliRun c = YolocacheTrain(*tmp_, reuse);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("run directory: other/exp\n"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(tmp_->path() / "other" / "exp3"));
}

TEST_F(RunOutputs, TrainingPicturesAreWrittenAndDecode) {
  ASSERT_EQ(train_.exit_code, 0) << train_.out << train_.err;
  if (std::string(PlotCanvas::Driver()) == "none") GTEST_SKIP() << "this build has no PLplot";
  const std::vector<std::pair<std::string, cv::Size>> pictures = {
      {"labels.jpg", {1200, 1200}},          {"train_batch0.jpg", {128, 128}},     {"train_batch1.jpg", {128, 128}},
      {"train_batch2.jpg", {128, 128}},      {"results.png", {2000, 800}},         {"BoxPR_curve.png", {1350, 900}},
      {"BoxF1_curve.png", {1350, 900}},      {"BoxP_curve.png", {1350, 900}},      {"BoxR_curve.png", {1350, 900}},
      {"confusion_matrix.png", {1200, 900}}, {"confusion_matrix_normalized.png", {1200, 900}},
      {"val_batch0_labels.jpg", {0, 0}},     {"val_batch0_pred.jpg", {0, 0}}};  // {0, 0}: any size
  for (const auto& [name, size] : pictures) {
    const fs::path file = Run() / name;
    ASSERT_TRUE(fs::exists(file)) << file;
    EXPECT_GT(fs::file_size(file), 1000u) << file;
    if (size.width > 0) {
      EXPECT_EQ(PictureSize(file), size) << file;
    }
    EXPECT_GT(PictureSize(file).width, 0) << file;
  }
  EXPECT_FALSE(fs::exists(Run() / "val_batch1_labels.jpg"));  // 6 val images: one batch of 8
  EXPECT_FALSE(fs::exists(Run() / "train_batch3.jpg"));  // the first three batches only
}

TEST_F(RunOutputs, ValWritesItsPlotsToRunsDetectVal) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  for (const char* expected : {"runs/detect/val", "runs/detect/val2"}) {
    CliRun v = YolocacheTrain(*tmp_, {"val", "--weights", Weights().string(), "--data", cache_.string(), "--device", "cpu",
                            "--threads", "1", "--json"});
    ASSERT_EQ(v.exit_code, 0) << v.err;
    const nlohmann::json j = nlohmann::json::parse(v.out);
    EXPECT_EQ(j["save_dir"], expected);
    if (std::string(PlotCanvas::Driver()) == "none") continue;
    for (const char* name : {"BoxPR_curve.png", "BoxF1_curve.png", "confusion_matrix.png", "confusion_matrix_normalized.png",
                             "val_batch0_labels.jpg", "val_batch0_pred.jpg"}) {
      const fs::path file = tmp_->path() / expected / name;
      ASSERT_TRUE(fs::exists(file)) << file;
      EXPECT_GT(PictureSize(file).width, 0) << file;
    }
  }
}

// a/img.jpg, b/img.jpg, b/img.png below a directory, and x/img.jpg, y/img.jpg given directly.
TEST_F(RunOutputs, PredictNamesNeverCollideAndTxtRowsMatchTheDetections) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const fs::path src = tmp_->path() / "data" / "images" / "val";
  std::vector<fs::path> jpgs;
  for (const auto& e : fs::directory_iterator(src)) jpgs.push_back(e.path());
  std::sort(jpgs.begin(), jpgs.end());
  ASSERT_GE(jpgs.size(), 5u);
  const fs::path in = tmp_->path() / "pin";
  for (const auto& [from, to] : std::vector<std::pair<fs::path, fs::path>>{{jpgs[0], in / "a" / "img.jpg"},
                                                                           {jpgs[1], in / "b" / "img.jpg"},
                                                                           {jpgs[2], in / "b" / "img.png"},
                                                                           {jpgs[3], tmp_->path() / "x" / "img.jpg"},
                                                                           {jpgs[4], tmp_->path() / "y" / "img.jpg"}}) {
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);  // JPEG bytes; the decoder goes by content
  }
  CliRun p = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), in.string(), (tmp_->path() / "x" / "img.jpg").string(),
                          (tmp_->path() / "y" / "img.jpg").string(), "--device", "cpu", "--conf", "0.001", "--max-det",
                          "20", "--save-txt", "--save-conf", "--json", "--name", "names"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json items = nlohmann::json::parse(p.out);
  ASSERT_EQ(items.size(), 5u);
  const fs::path dir = tmp_->path() / "runs" / "detect" / "names";
  std::vector<std::string> outputs;
  for (const auto& item : items) outputs.push_back(Printed(item["output"]).lexically_relative(dir).string());
  EXPECT_EQ(outputs, (std::vector<std::string>{"a/img.jpg", "b/img.jpg", "b/img_png.jpg", "img.jpg", "img_2.jpg"}));
  int rows_checked = 0;
  for (const auto& item : items) {
    ASSERT_TRUE(fs::exists(Printed(item["output"])));
    const auto& dets = item["detections"];
    if (dets.empty()) continue;
    // labels/<output without extension>.txt: one "cls xc yc w h conf" row per detection, in order.
    std::istringstream rows(testing::ReadFile(Printed(item["labels"])));
    const double w = item["width"].get<double>(), h = item["height"].get<double>();
    for (const auto& d : dets) {
      int cls = -1;
      double xc, yc, bw, bh, conf;
      ASSERT_TRUE(rows >> cls >> xc >> yc >> bw >> bh >> conf) << item["labels"];
      const auto box = d["box"];
      EXPECT_EQ(cls, d["class"].get<int>());
      EXPECT_NEAR(xc, (box[0].get<double>() + box[2].get<double>()) / 2 / w, 1e-5);
      EXPECT_NEAR(yc, (box[1].get<double>() + box[3].get<double>()) / 2 / h, 1e-5);
      EXPECT_NEAR(bw, (box[2].get<double>() - box[0].get<double>()) / w, 1e-5);
      EXPECT_NEAR(bh, (box[3].get<double>() - box[1].get<double>()) / h, 1e-5);
      EXPECT_NEAR(conf, d["confidence"].get<double>(), 1e-5);
      ++rows_checked;
    }
    std::string rest;
    EXPECT_FALSE(rows >> rest) << "more rows than detections in " << item["labels"];
  }
  EXPECT_GT(rows_checked, 0);
  EXPECT_TRUE(fs::exists(dir / "labels" / "b" / "img_png.txt") || items[2]["detections"].empty());
  // Without --save-conf the rows have five fields.
  CliRun q = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), (tmp_->path() / "x" / "img.jpg").string(),
                          "--device", "cpu", "--conf", "0.001", "--save-txt", "--out", (tmp_->path() / "noconf").string()});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const std::string txt = testing::ReadFile(tmp_->path() / "noconf" / "labels" / "img.txt");
  ASSERT_FALSE(txt.empty());
  std::istringstream first(txt.substr(0, txt.find('\n')));
  int fields = 0;
  for (std::string f; first >> f;) ++fields;
  EXPECT_EQ(fields, 5) << txt;
  EXPECT_NE(q.out.find("Results saved to " + (tmp_->path() / "noconf").string()), std::string::npos) << q.out;
}

// IoU of two [x1, y1, x2, y2] JSON boxes.
double BoxIou(const nlohmann::json& a, const nlohmann::json& b) {
  const double w = std::max(0.0, std::min(a[2].get<double>(), b[2].get<double>()) - std::max(a[0].get<double>(), b[0].get<double>()));
  const double h = std::max(0.0, std::min(a[3].get<double>(), b[3].get<double>()) - std::max(a[1].get<double>(), b[1].get<double>()));
  const auto area = [](const nlohmann::json& x) {
    return (x[2].get<double>() - x[0].get<double>()) * (x[3].get<double>() - x[1].get<double>());
  };
  return w * h / (area(a) + area(b) - w * h);
}

// predict's classes, agnostic_nms, half (on the CPU: fp32, said), save_crop and show_boxes against one
// baseline run on the val images.
TEST_F(RunOutputs, PredictClassesAgnosticHalfCropsAndPlainPictures) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const fs::path src = tmp_->path() / "data" / "images" / "val";
  auto predict = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"predict", "--weights", Weights().string(), src.string(), "--device", "cpu", "--conf",
                                     "0.001", "--json", "--out", (tmp_->path() / out).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return YolocacheTrain(*tmp_, args);
  };
  const CliRun base = predict("p_base", {});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const nlohmann::json all = nlohmann::json::parse(base.out);
  int keep = -1;  // a class the model does predict: the first image's best detection's
  for (const auto& item : all) {
    if (keep < 0 && !item["detections"].empty()) keep = item["detections"][0]["class"].get<int>();
  }
  ASSERT_GE(keep, 0) << "no detections at conf 0.001";
  // Options that do not touch each other share a run (CI time): classes with the crops, half with the
  // plain pictures.
  const CliRun cls0 = predict("p_cls0", {"--classes", "[" + std::to_string(keep) + "]", "--save-crop"});
  const CliRun agnostic = predict("p_agn", {"--agnostic-nms"});
  const CliRun half = predict("p_half", {"--half", "--no-show-boxes"});
  for (const CliRun* r : {&cls0, &agnostic, &half}) ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(half.err.find("half=True runs fp16 on a GPU only; running fp32 on the CPU"), std::string::npos) << half.err;
  const nlohmann::json only0 = nlohmann::json::parse(cls0.out), agn = nlohmann::json::parse(agnostic.out),
                       h = nlohmann::json::parse(half.out);
  ASSERT_EQ(only0.size(), all.size());
  size_t kept0 = 0, total = 0, fewer = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(h[i]["detections"], all[i]["detections"]) << i;
    // classes=[keep]: exactly that class's detections of the unfiltered run (NMS keeps classes apart).
    nlohmann::json want = nlohmann::json::array();
    for (const auto& d : all[i]["detections"]) {
      if (d["class"] == keep) want.push_back(d);
    }
    EXPECT_EQ(only0[i]["detections"], want) << i;
    kept0 += want.size();
    total += all[i]["detections"].size();
    // agnostic_nms: no two kept boxes overlap beyond the IoU threshold, whatever their classes.
    const auto& dets = agn[i]["detections"];
    EXPECT_LE(dets.size(), all[i]["detections"].size());
    fewer += dets.size() < all[i]["detections"].size();
    for (size_t a = 0; a < dets.size(); ++a) {
      for (size_t b = a + 1; b < dets.size(); ++b) EXPECT_LE(BoxIou(dets[a]["box"], dets[b]["box"]), 0.7 + 1e-6);
    }
  }
  EXPECT_GT(kept0, 0u);
  EXPECT_LT(kept0, total);  // the filter removed something
  EXPECT_GT(fewer, 0u);     // agnostic suppression removed something

  // save_crop: one crops/<class name>/<stem>[N].jpg per detection, of save_one_box's size.
  const nlohmann::json& cropped = only0;
  const std::set<std::string> crop_files = FilesBelow(tmp_->path() / "p_cls0" / "crops");
  size_t expected = 0;
  for (const auto& item : cropped) {
    const std::string stem = fs::path(item["source"].get<std::string>()).stem().string();
    std::map<std::string, int> seen;  // per class folder: <stem>.jpg, then <stem>2.jpg ...
    for (const auto& d : item["detections"]) {
      Detection det;
      det.x1 = d["box"][0].get<float>(), det.y1 = d["box"][1].get<float>();
      det.x2 = d["box"][2].get<float>(), det.y2 = d["box"][3].get<float>();
      const std::string folder = d["name"].get<std::string>();
      const int n = ++seen[folder];
      const fs::path file = fs::path(folder) / (stem + (n == 1 ? "" : std::to_string(n)) + ".jpg");
      ASSERT_EQ(crop_files.count(file.string()), 1u) << file << " of " << crop_files.size();
      const cv::Rect r = CropRect(det, item["width"].get<int>(), item["height"].get<int>());
      EXPECT_EQ(PictureSize(tmp_->path() / "p_cls0" / "crops" / file), r.size()) << file;
      ++expected;
    }
  }
  EXPECT_GT(expected, 0u);
  EXPECT_EQ(crop_files.size(), expected);

  // show_boxes=False: the saved picture is the image itself; the default draws on it.
  const std::string name = fs::path(all[0]["output"].get<std::string>()).filename().string();
  auto pixels = [](const fs::path& f) {
    const std::string bytes = testing::ReadFile(f);
    return DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), DecodeOptions{}).rgb;
  };
  const cv::Mat original = pixels(fs::path(all[0]["source"].get<std::string>()));
  const cv::Mat plain_pic = pixels(tmp_->path() / "p_half" / name), boxed = pixels(tmp_->path() / "p_base" / name);
  ASSERT_FALSE(original.empty());
  ASSERT_EQ(plain_pic.size(), original.size());
  ASSERT_EQ(boxed.size(), original.size());
  cv::Mat plain_diff, boxed_diff;
  cv::absdiff(plain_pic, original, plain_diff);
  cv::absdiff(boxed, original, boxed_diff);
  EXPECT_LT(cv::mean(plain_diff)[0], 4.0);  // JPEG noise only
  EXPECT_GT(cv::sum(boxed_diff)[0], 2 * cv::sum(plain_diff)[0]);
}

// save_json: predictions.json holds exactly val's detections, in original-image pixels, as Ultralytics
// writes them; half on the CPU runs fp32 and says so.
TEST_F(RunOutputs, ValSaveJsonHoldsTheValPredictions) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  CheckpointValOptions vo;
  vo.weights = Weights().string();
  vo.data = cache_.string();
  vo.device = "cpu";
  vo.threads = 1;
  vo.plots = false;
  vo.save_json = true;
  vo.half = true;
  vo.out = (tmp_->path() / "val_json").string();
  Result<CheckpointValReport> r = ValidateCheckpoint(vo);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->predictions_json, tmp_->path() / "val_json" / "predictions.json");
  bool said_half = false;
  for (const std::string& note : r->notes) said_half |= note.find("half=True runs fp16 on a GPU only") != std::string::npos;
  EXPECT_TRUE(said_half);
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFile(r->predictions_json));
  size_t row = 0;
  for (const ImagePredictions& image : r->result.predictions) {
    if (!image.detections.defined()) continue;
    const at::Tensor d = image.detections.contiguous();
    for (int64_t k = 0; k < d.size(0); ++k, ++row) {
      ASSERT_LT(row, j.size());
      const nlohmann::json& e = j[row];
      const float* p = d[k].data_ptr<float>();
      EXPECT_EQ(e["image_id"], fs::path(image.source).stem().string());  // synth names are not numbers
      EXPECT_EQ(e["category_id"], static_cast<int>(p[5]) + 1);
      EXPECT_NEAR(e["bbox"][0].get<double>(), p[0], 6e-4);
      EXPECT_NEAR(e["bbox"][1].get<double>(), p[1], 6e-4);
      EXPECT_NEAR(e["bbox"][2].get<double>(), p[2] - p[0], 6e-4);
      EXPECT_NEAR(e["bbox"][3].get<double>(), p[3] - p[1], 6e-4);
      EXPECT_NEAR(e["score"].get<double>(), p[4], 6e-6);
    }
  }
  EXPECT_GT(row, 0u);
  EXPECT_EQ(row, j.size());
  // fp32 on the CPU: the same figures as without half.
  vo.half = false;
  vo.save_json = false;
  vo.out = (tmp_->path() / "val_nojson").string();
  Result<CheckpointValReport> plain = ValidateCheckpoint(vo);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->result.metrics.map50_95, r->result.metrics.map50_95);
  EXPECT_TRUE(plain->predictions_json.empty());
  EXPECT_FALSE(fs::exists(tmp_->path() / "val_nojson" / "predictions.json"));
  // The command line: --save-json names the file in --json.
  CliRun v = YolocacheTrain(*tmp_, {"val", "--weights", Weights().string(), "--data", cache_.string(), "--device", "cpu",
                                    "--no-plots", "--save-json", "--agnostic-nms", "--json", "--out",
                                    (tmp_->path() / "val_cli").string()});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const nlohmann::json vj = nlohmann::json::parse(v.out);
  EXPECT_EQ(Printed(vj["predictions_json"]), tmp_->path() / "val_cli" / "predictions.json");
  EXPECT_TRUE(fs::exists(tmp_->path() / "val_cli" / "predictions.json"));
}

// augment=True (val, predict): test-time augmentation changes the detections, which stay valid; val's
// loss is the plain pass's (Ultralytics' standalone val has none to compare).
TEST_F(RunOutputs, AugmentChangesValAndPredictDetections) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  auto val = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"val", "--weights", Weights().string(), "--data", cache_.string(), "--device", "cpu",
                                     "--threads", "1", "--no-plots", "--save-json", "--json", "--out",
                                     (tmp_->path() / out).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return YolocacheTrain(*tmp_, args);
  };
  const CliRun plain = val("val_plain", {}), tta = val("val_tta", {"augment=True"});  // Ultralytics' key form
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(tta.exit_code, 0) << tta.err;
  const nlohmann::json pj = nlohmann::json::parse(plain.out), tj = nlohmann::json::parse(tta.out);
  EXPECT_EQ(tj["images"], pj["images"]);
  for (const char* k : {"precision", "recall", "mAP50", "mAP50-95"}) {
    EXPECT_GE(tj[k].get<double>(), 0.0) << k;
    EXPECT_LE(tj[k].get<double>(), 1.0) << k;
  }
  EXPECT_EQ(tj["loss"], pj["loss"]);
  const nlohmann::json plain_rows = nlohmann::json::parse(testing::ReadFile(tmp_->path() / "val_plain" / "predictions.json"));
  const nlohmann::json tta_rows = nlohmann::json::parse(testing::ReadFile(tmp_->path() / "val_tta" / "predictions.json"));
  EXPECT_GT(tta_rows.size(), 0u);
  EXPECT_NE(tta_rows, plain_rows);

  const fs::path src = tmp_->path() / "data" / "images" / "val";
  auto predict = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"predict", "--weights", Weights().string(), src.string(), "--device", "cpu",
                                     "--conf", "0.001", "--json", "--out", (tmp_->path() / out).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return YolocacheTrain(*tmp_, args);
  };
  const CliRun base = predict("p_plain", {}), augmented = predict("p_tta", {"--augment"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(augmented.exit_code, 0) << augmented.err;
  const nlohmann::json all = nlohmann::json::parse(base.out), aug = nlohmann::json::parse(augmented.out);
  ASSERT_EQ(aug.size(), all.size());
  size_t differ = 0, boxes = 0;
  for (size_t i = 0; i < aug.size(); ++i) {
    differ += aug[i]["detections"] != all[i]["detections"];
    const double w = aug[i]["width"].get<double>(), h = aug[i]["height"].get<double>();
    for (const auto& d : aug[i]["detections"]) {
      const auto& b = d["box"];
      EXPECT_GE(b[0].get<double>(), 0.0);
      EXPECT_GE(b[1].get<double>(), 0.0);
      EXPECT_LE(b[2].get<double>(), w);
      EXPECT_LE(b[3].get<double>(), h);
      EXPECT_LE(b[0].get<double>(), b[2].get<double>());
      EXPECT_LE(b[1].get<double>(), b[3].get<double>());
      EXPECT_GE(d["confidence"].get<double>(), 0.001);
      ++boxes;
    }
  }
  EXPECT_GT(boxes, 0u);
  EXPECT_GT(differ, 0u);
}

// The file names below the run folder equal those of Ultralytics' own run (yolov8n.yaml, the same data,
// 1 epoch, imgsz 64, batch 4, CPU), minus the files only one side writes (docs/TRAINER.md "Run folder":
// none today).
TEST_F(RunOutputs, RunFolderHasUltralyticsFileNames) {
  ASSERT_EQ(train_.exit_code, 0) << train_.out << train_.err;
  if (std::string(PlotCanvas::Driver()) == "none") GTEST_SKIP() << "this build has no PLplot: no pictures to compare";
  testing::UltralyticsFixture u = testing::UltralyticsFixture::Find();
  if (!u.available) GTEST_SKIP() << u.why;
  const fs::path work = tmp_->path() / "ultralytics";
  fs::create_directories(work);
  ASSERT_EQ(u.Run("ultralytics_run.py", {(tmp_->path() / "data" / "data.yaml").string(), "64", "4", (work / "runs").string(),
                                         (work / "out.json").string(), Weights().string()},
                  work),
            0)
      << testing::ReadFile(work / "python.log");
  const nlohmann::json ref = nlohmann::json::parse(testing::ReadFile(work / "out.json"));
  const std::set<std::string> only_ultralytics = {}, only_ours = {};
  std::set<std::string> theirs, ours;
  for (const auto& f : ref["files"]) {
    if (!only_ultralytics.count(f.get<std::string>())) theirs.insert(f.get<std::string>());
  }
  for (const std::string& f : files_) {
    if (!only_ours.count(f)) ours.insert(f);
  }
  EXPECT_EQ(ours, theirs);
  // args.yaml: the same keys in the same order.
  std::vector<std::string> keys;
  std::istringstream args(testing::ReadFile(Run() / "args.yaml"));
  for (std::string line; std::getline(args, line);) {
    if (!line.empty() && line[0] != '#') keys.push_back(line.substr(0, line.find(':')));
  }
  EXPECT_EQ(nlohmann::json(keys), ref["args_keys"]);
  // best.pt: Ultralytics' keys (ours adds only its `yolocache` entry), and train_results as Ultralytics
  // reads results.csv back (the same columns, a value per epoch).
  std::vector<std::string> best_keys;
  for (const auto& k : ref["ours_best_keys"]) {
    if (k != "yolocache") best_keys.push_back(k.get<std::string>());
  }
  EXPECT_EQ(nlohmann::json(best_keys), ref["best_keys"]);
  std::vector<std::string> columns, their_columns;
  for (const auto& [k, v] : ref["ours_train_results"].items()) {
    columns.push_back(k);
    EXPECT_EQ(v.size(), 1u) << k;  // 1 epoch
  }
  for (const auto& [k, v] : ref["train_results"].items()) their_columns.push_back(k);
  EXPECT_EQ(columns, their_columns);
  EXPECT_EQ(ref["ours_train_results"]["epoch"][0], 1);
}

// Export without an imgsz: the checkpoint's training size (64 here), as Ultralytics exports.
TEST_F(RunOutputs, ExportUsesTheTrainingImgszAndValPredictRunTheTorchScript) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  ExportOptions o;
  o.weights = Weights();
  o.format = ExportFormat::kTorchScript;
  o.out = tmp_->path() / "exports" / "best.torchscript";
  Result<ExportReport> r = Export(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->imgsz_from_weights);
  EXPECT_EQ(r->imgsz, (std::array<int, 2>{64, 64}));
  EXPECT_EQ(r->input_shape, (std::vector<int64_t>{1, 3, 64, 64}));
  o.imgsz = {96};  // given: as given
  o.out = tmp_->path() / "exports" / "best96.torchscript";
  Result<ExportReport> r96 = Export(o);
  ASSERT_TRUE(r96.ok()) << r96.status().ToString();
  EXPECT_FALSE(r96->imgsz_from_weights);
  EXPECT_EQ(r96->input_shape, (std::vector<int64_t>{1, 3, 96, 96}));

  // val: the same figures from the export as from the weights at the export's shape (batch 1, square).
  CheckpointValOptions vo;
  vo.data = cache_.string();
  vo.device = "cpu";
  vo.threads = 1;
  vo.plots = false;
  vo.out = (tmp_->path() / "val_ts").string();
  vo.weights = (tmp_->path() / "exports" / "best.torchscript").string();
  Result<CheckpointValReport> ts = ValidateCheckpoint(vo);
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  EXPECT_EQ(ts->imgsz, 64);
  vo.weights = Weights().string();
  vo.batch = 1;
  vo.rect = false;
  vo.compute_loss = false;
  Result<CheckpointValReport> pt = ValidateCheckpoint(vo);
  ASSERT_TRUE(pt.ok()) << pt.status().ToString();
  EXPECT_EQ(ts->result.metrics.images, pt->result.metrics.images);
  for (auto [a, b] : {std::pair{ts->result.metrics.map50, pt->result.metrics.map50},
                      std::pair{ts->result.metrics.map50_95, pt->result.metrics.map50_95},
                      std::pair{ts->result.metrics.precision, pt->result.metrics.precision}}) {
    EXPECT_NEAR(a, b, 1e-4);
  }
  // predict: detections from the export.
  Result<std::unique_ptr<Predictor>> p =
      Predictor::Load(tmp_->path() / "exports" / "best.torchscript", at::Device(at::kCPU), PredictOptions{0, 0.001});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->imgsz(), 64);
  Result<std::vector<Detection>> d = (*p)->Predict(cv::Mat(50, 80, CV_8UC3, cv::Scalar(90, 90, 90)));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // --visualize needs a .pt's layers: an export is refused (exit 2), naming it.
  PredictOptions visualize{0, 0.001};
  visualize.visualize = true;
  Result<std::unique_ptr<Predictor>> seen =
      Predictor::Load(tmp_->path() / "exports" / "best.torchscript", at::Device(at::kCPU), visualize);
  ASSERT_FALSE(seen.ok());
  EXPECT_EQ(seen.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(seen.status().message().find("best.torchscript: --visualize needs .pt weights"), std::string::npos)
      << seen.status().ToString();
  // An nms export (conf 0.001 baked in) predicts the same detections: its rows are taken as they are
  // (end2end, from its metadata), where the plain export's go through our NMS.
  ExportOptions on = o;
  on.imgsz = {};
  on.nms = true;
  on.conf = 0.001;
  on.out = tmp_->path() / "exports" / "best_nms.torchscript";
  ASSERT_TRUE(Export(on).ok());
  Result<std::unique_ptr<Predictor>> pn =
      Predictor::Load(on.out, at::Device(at::kCPU), PredictOptions{0, 0.001});
  ASSERT_TRUE(pn.ok()) << pn.status().ToString();
  Result<std::vector<Detection>> dn = (*pn)->Predict(cv::Mat(50, 80, CV_8UC3, cv::Scalar(90, 90, 90)));
  ASSERT_TRUE(dn.ok()) << dn.status().ToString();
  ASSERT_EQ(dn->size(), d->size());
  EXPECT_FALSE(d->empty());
  for (size_t i = 0; i < d->size(); ++i) {
    EXPECT_EQ((*dn)[i].cls, (*d)[i].cls) << i;
    EXPECT_NEAR((*dn)[i].conf, (*d)[i].conf, 1e-6) << i;
    EXPECT_NEAR((*dn)[i].x1, (*d)[i].x1, 1e-2) << i;
    EXPECT_NEAR((*dn)[i].y2, (*d)[i].y2, 1e-2) << i;
  }
  vo.weights = on.out.string();
  vo.nms.conf = 0.001;
  Result<CheckpointValReport> tsn = ValidateCheckpoint(vo);
  ASSERT_TRUE(tsn.ok()) << tsn.status().ToString();
  EXPECT_EQ(tsn->result.metrics.images, ts->result.metrics.images);
  // An .onnx file: refused, saying what to give.
  testing::WriteFile(tmp_->path() / "exports" / "best.onnx", "not read");
  Result<std::unique_ptr<Predictor>> onnx = Predictor::Load(tmp_->path() / "exports" / "best.onnx", at::Device(at::kCPU), {});
  ASSERT_FALSE(onnx.ok());
  EXPECT_NE(onnx.status().message().find("best.onnx: an ONNX file"), std::string::npos) << onnx.status().ToString();
  EXPECT_NE(onnx.status().message().find("export --format torchscript"), std::string::npos) << onnx.status().ToString();
  vo.weights = (tmp_->path() / "exports" / "best.onnx").string();
  EXPECT_EQ(ValidateCheckpoint(vo).status().code(), Status::Code::kUnsupported);
}

// The traced graph names no device and holds no cached anchor tensor: traced on the CPU, it runs where
// its tensors are loaded (map_location, as Ultralytics' AutoBackend loads it).
TEST_F(RunOutputs, TorchScriptNamesNoDeviceAndRunsOnCuda) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  ExportOptions o;
  o.weights = Weights();
  o.format = ExportFormat::kTorchScript;
  o.out = tmp_->path() / "exports" / "device.torchscript";
  Result<ExportReport> r = Export(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  torch::jit::Module m = torch::jit::load(o.out.string(), at::Device(at::kCPU));
  const auto graph = m.get_method("forward").graph();
  for (const torch::jit::Node* n : graph->nodes()) {
    if (n->kind() != c10::prim::Constant) continue;
    const auto kind = n->output()->type()->kind();
    EXPECT_NE(kind, c10::TypeKind::DeviceObjType) << "a device constant: " << *n;
  }
  const at::Tensor x = at::rand({1, 3, 64, 64});
  at::Tensor cpu;
  {
    c10::NoGradGuard no_grad;
    cpu = m.forward({x}).toTensor();
  }
  EXPECT_EQ(cpu.sizes(), (std::vector<int64_t>{1, 4 + 4, 8 * 8 + 4 * 4 + 2 * 2}));
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the CUDA half of this test runs on a GPU host";
  torch::jit::Module g = torch::jit::load(o.out.string(), at::Device(at::kCUDA));
  at::Tensor cuda;
  {
    c10::NoGradGuard no_grad;
    cuda = g.forward({x.to(at::kCUDA)}).toTensor();
  }
  ASSERT_TRUE(cuda.is_cuda());
  EXPECT_LT((cuda.cpu() - cpu).abs().max().item<double>(), 1e-3 * (1 + cpu.abs().max().item<double>()));
}

TEST(PredictLabels, DrawnLabelsCarryTheConfidence) {
  Detection d;
  d.cls = 1;
  d.conf = 0.8749f;
  EXPECT_EQ(DetectionLabel(d, {"cat", "person"}), "person 0.87");
  d.cls = 7;  // beyond the names: the id
  EXPECT_EQ(DetectionLabel(d, {"cat"}), "7 0.87");
  EXPECT_EQ(FormatLabelRows({{10, 20, 30, 60, 0.5f, 2}}, 100, 200, true), "2 0.2 0.2 0.2 0.2 0.5\n");
}

TEST_F(RunOutputs, PredictReadsAndWritesVideoFiles) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const fs::path video = tmp_->path() / "clip.avi";
#if YOLOCACHE_TEST_VIDEOIO
  {
    cv::VideoWriter w(video.string(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 10, cv::Size(96, 64), true);
    ASSERT_TRUE(w.isOpened());
    for (int f = 0; f < 5; ++f) {
      cv::Mat frame(64, 96, CV_8UC3, cv::Scalar(40, 40, 40));
      cv::Mat(frame, cv::Rect(10 + 5 * f, 10, 30, 30)).setTo(cv::Scalar(0, 200, 255));
      w.write(frame);
    }
  }
  CliRun p = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), video.string(), "--device", "cpu", "--conf",
                          "0.001", "--save-txt", "--json", "--name", "video"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json items = nlohmann::json::parse(p.out);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["frames"], 5);
  const fs::path out = tmp_->path() / "runs" / "detect" / "video" / "clip.avi";
  EXPECT_EQ(fs::path(items[0]["output"].get<std::string>()), fs::path("runs/detect/video/clip.avi"));
  cv::VideoCapture back(out.string());
  ASSERT_TRUE(back.isOpened()) << out;
  int frames = 0;
  for (cv::Mat f; back.read(f); ++frames) EXPECT_EQ(f.size(), cv::Size(96, 64));
  EXPECT_EQ(frames, 5);
  if (!items[0]["detections"].empty()) {
    EXPECT_TRUE(fs::exists(tmp_->path() / "runs" / "detect" / "video" / "labels" / "clip_1.txt"));
  }
  // A file that is not a video: exit 1 naming it, no output left behind.
  testing::WriteFile(tmp_->path() / "bad.mp4", "not a video");
  CliRun bad = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), (tmp_->path() / "bad.mp4").string(), "--device",
                            "cpu", "--out", (tmp_->path() / "badout").string()});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("bad.mp4"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(tmp_->path() / "badout" / "bad.avi"));
#else
  testing::WriteFile(video, "any bytes");
  CliRun p = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), video.string(), "--device", "cpu"});
  EXPECT_EQ(p.exit_code, 1) << p.err;
  EXPECT_NE(p.err.find("libopencv-videoio-dev"), std::string::npos) << p.err;
#endif
}

TEST_F(RunOutputs, PredictVidStrideReadsEveryNthFrameAndSaveFramesWritesEach) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
#if YOLOCACHE_TEST_VIDEOIO
  const fs::path video = tmp_->path() / "strided.avi";
  {
    cv::VideoWriter w(video.string(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 10, cv::Size(96, 64), true);
    ASSERT_TRUE(w.isOpened());
    for (int f = 0; f < 7; ++f) w.write(cv::Mat(64, 96, CV_8UC3, cv::Scalar::all(20 + 30 * f)));  // frame f's grey
  }
  CliRun p = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), video.string(), "--device", "cpu",
                                    "--vid-stride", "3", "--save-frames", "--no-show-boxes", "--json", "--name", "strided"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  // LoadImagesAndVideos grabs vid_stride frames and decodes the last: frames 2 and 5 (0-based) of 7, as
  // its int(7 / 3) = 2 frames.
  EXPECT_EQ(nlohmann::json::parse(p.out)[0]["frames"], 2);
  const fs::path run = tmp_->path() / "runs" / "detect" / "strided";
  cv::VideoCapture back((run / "strided.avi").string());
  ASSERT_TRUE(back.isOpened());
  EXPECT_NEAR(back.get(cv::CAP_PROP_FPS), 10, 1e-6);  // the source's rate, as Ultralytics writes it
  int frames = 0;
  for (cv::Mat f; back.read(f);) ++frames;
  EXPECT_EQ(frames, 2);
  // save_frames: <stem>_frames/<stem>_<n>.jpg, n counting the frames read from 1.
  for (int n : {1, 2}) {
    const fs::path still = run / "strided_frames" / ("strided_" + std::to_string(n) + ".jpg");
    const std::string bytes = testing::ReadFile(still);
    DecodedImage d = DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), DecodeOptions{});
    ASSERT_FALSE(d.has_error() || d.rgb.empty()) << still;
    EXPECT_EQ(d.rgb.size(), cv::Size(96, 64));
    EXPECT_NEAR(cv::mean(d.rgb)[0], 20 + 30 * (3 * n - 1), 6) << still;  // frame 3n - 1's grey
  }
  EXPECT_FALSE(fs::exists(run / "strided_frames" / "strided_3.jpg"));
  CliRun bad = YolocacheTrain(*tmp_, {"predict", "--weights", Weights().string(), video.string(), "--device", "cpu",
                                      "--vid-stride", "0", "--name", "stride0"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--vid-stride must be >= 1"), std::string::npos) << bad.err;
#else
  GTEST_SKIP() << "this build has no OpenCV videoio";
#endif
}

TEST(Charts, GaussianSmoothKeepsConstantsAndMatchesScipyReflect) {
  for (double v : GaussianSmooth({2, 2, 2, 2}, 3.0)) EXPECT_NEAR(v, 2.0, 1e-12);
  // scipy.ndimage.gaussian_filter1d([0., 0, 1, 0, 0], 1) (Debian's python3-scipy): the reflected tail
  // folds back into the edge samples.
  const std::vector<double> s = GaussianSmooth({0, 0, 1, 0, 0}, 1.0);
  const std::vector<double> ref = {0.05842299, 0.24210528, 0.39894347, 0.24210528, 0.05842299};
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(s[i], ref[i], 1e-7) << i;
}

}  // namespace
}  // namespace yc::trainer
