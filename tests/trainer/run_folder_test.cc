// The pieces of a run folder as Ultralytics writes it, without training: args.yaml (keys and order of
// ultralytics/cfg/default.yaml, the user's data YAML, the run id in a comment), the final per-class
// table, which training batches are drawn (plot_idx), the labels drawn on batch grids, and anchors that
// a TorchScript trace records without a device. run_outputs_test.cc compares a whole folder.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "trainer/config/args_yaml.h"
#include "trainer/eval/class_table.h"
#include "trainer/model/box_ops.h"
#include "trainer/plots/batch_grid.h"

namespace yc::trainer {
namespace {

namespace fs = std::filesystem;

// The keys of a flat YAML mapping, in order (comments and blank lines skipped).
std::vector<std::string> YamlKeys(const std::string& text) {
  std::vector<std::string> keys;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == ' ') continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) keys.push_back(line.substr(0, colon));
  }
  return keys;
}

std::string Value(const std::string& yaml, const std::string& key) {
  std::istringstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
  }
  return "<missing>";
}

TEST(ArgsYaml, UltralyticsKeysInDefaultYamlOrderThenSaveDir) {
  TrainOptions o;
  o.data = "/caches/coco8-640-abc";
  o.data_source = "data/coco8.yaml";
  o.out = "runs/detect/train3";
  o.imgsz = 128;
  o.epochs = 3;
  o.hyp.close_mosaic = 2;
  o.amp = AmpMode::kOff;
  const std::string yaml = ArgsYaml(o, "00ff00ff00ff00ff");
  EXPECT_EQ(RunIdFromArgsYaml(yaml), "00ff00ff00ff00ff");
  EXPECT_EQ(RunIdFromArgsYaml("task: detect\n"), "");
  EXPECT_EQ(Value(yaml, "data"), "data/coco8.yaml");  // the user's --data, not the cache
  EXPECT_EQ(Value(yaml, "model"), "yolov8n.yaml");
  EXPECT_EQ(Value(yaml, "imgsz"), "128");
  EXPECT_EQ(Value(yaml, "close_mosaic"), "2");
  EXPECT_EQ(Value(yaml, "amp"), "false");
  EXPECT_EQ(Value(yaml, "name"), "train3");
  EXPECT_EQ(Value(yaml, "save_dir"), "runs/detect/train3");
  EXPECT_EQ(Value(yaml, "lr0"), "0.01");
  EXPECT_EQ(Value(yaml, "warmup_epochs"), "3.0");
  EXPECT_EQ(Value(yaml, "weight_decay"), "0.0005");
  EXPECT_EQ(Value(yaml, "time"), "null");
  o.data_source.clear();
  EXPECT_EQ(Value(ArgsYaml(o, ""), "data"), "/caches/coco8-640-abc");  // a cache given directly

  // Ultralytics' own list, where its source is beside the checkout.
  const fs::path defaults = fs::path(YOLOCACHE_SOURCE_DIR) / ".." / "shared" / "ultralytics" / "ultralytics" / "cfg" / "default.yaml";
  if (!fs::exists(defaults)) GTEST_SKIP() << "no Ultralytics checkout at " << defaults;
  std::vector<std::string> expected = YamlKeys(testing::ReadFile(defaults));
  expected.push_back("save_dir");  // the trainer adds it (ultralytics/engine/trainer.py)
  EXPECT_EQ(YamlKeys(yaml), expected);
}

// fraction, single_cls, classes and bgr under Ultralytics' keys; a list in PyYAML's block style, as
// YAML.save writes vars(args).
TEST(ArgsYaml, DataSelectionKeys) {
  TrainOptions o;
  std::string yaml = ArgsYaml(o, "");
  EXPECT_EQ(Value(yaml, "fraction"), "1.0");
  EXPECT_EQ(Value(yaml, "single_cls"), "false");
  EXPECT_EQ(Value(yaml, "classes"), "null");
  EXPECT_EQ(Value(yaml, "bgr"), "0.0");
  o.fraction = 0.5;
  o.single_cls = true;
  o.classes = {0, 2};
  o.hyp.bgr = 0.25;
  yaml = ArgsYaml(o, "");
  EXPECT_EQ(Value(yaml, "fraction"), "0.5");
  EXPECT_EQ(Value(yaml, "single_cls"), "true");
  EXPECT_EQ(Value(yaml, "bgr"), "0.25");
  EXPECT_NE(yaml.find("\nclasses:\n- 0\n- 2\nretina_masks: false\n"), std::string::npos) << yaml;
}

TEST(ArgsYaml, ScalarsReadBackAsYamlReadsThem) {
  EXPECT_EQ(YamlString("runs/detect"), "runs/detect");
  EXPECT_EQ(YamlString(""), "''");
  EXPECT_EQ(YamlString("null"), "'null'");
  EXPECT_EQ(YamlString("yes"), "'yes'");
  EXPECT_EQ(YamlString("123"), "'123'");
  EXPECT_EQ(YamlString("-1"), "'-1'");
  EXPECT_EQ(YamlString("a: b"), "'a: b'");
  EXPECT_EQ(YamlString("it's # here"), "'it''s # here'");
  EXPECT_EQ(YamlString("*star"), "'*star'");
  EXPECT_EQ(YamlFloat(0.1), "0.1");
  EXPECT_EQ(YamlFloat(3), "3.0");
  EXPECT_EQ(YamlFloat(1e-05), "1.0e-05");
  EXPECT_EQ(YamlFloat(0.937), "0.937");
}

MetricsSummary TwoClassMetrics() {
  MetricsSummary m;
  m.images = 6;
  m.instances = 12;
  m.precision = 0.5;
  m.recall = 0.25;
  m.map50 = 0.4;
  m.map50_95 = 0.2;
  m.per_class.classes = {0, 1};
  m.per_class.num_targets = {5, 7};
  m.per_class.p = {0.6, 0.4};
  m.per_class.r = {0.3, 0.2};
  m.per_class.ap = {std::vector<double>(10, 0.5), std::vector<double>(10, 0.1)};
  m.images_per_class = {4, 5};
  m.instances_per_class = {5, 7};
  return m;
}

TEST(ClassTable, AsUltralyticsPrintsIt) {
  const std::vector<std::string> lines = ClassTableLines(TwoClassMetrics(), {"red", "green"});
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)");
  EXPECT_EQ(lines[1], "                   all          6         12        0.5       0.25        0.4        0.2");
  EXPECT_EQ(lines[2], "                   red          4          5        0.6        0.3        0.5        0.5");
  EXPECT_EQ(lines[3], "                 green          5          7        0.4        0.2        0.1        0.1");
  // One class, or validation during training: the "all" row alone.
  EXPECT_EQ(ClassTableLines(TwoClassMetrics(), {"red"}).size(), 2u);
  EXPECT_EQ(ClassTableLines(TwoClassMetrics(), {"red", "green"}, false).size(), 2u);
  // Nothing detected: each labelled class at zero.
  MetricsSummary none = TwoClassMetrics();
  none.per_class = {};
  const std::vector<std::string> zero = ClassTableLines(none, {"red", "green"});
  ASSERT_EQ(zero.size(), 4u);
  EXPECT_EQ(zero[3], "                 green          5          7          0          0          0          0");
}

TEST(TrainBatchPictures, FirstThreeAndThreeAfterCloseMosaic) {
  // 10 epochs of 5 batches, close_mosaic 2: batches 0-2 and 40-42 (epoch 9's first three).
  std::vector<int64_t> drawn;
  for (int64_t ni = 0; ni < 50; ++ni) {
    if (IsPlottedTrainBatch(ni, 10, 2, 5, false)) drawn.push_back(ni);
  }
  EXPECT_EQ(drawn, (std::vector<int64_t>{0, 1, 2, 40, 41, 42}));
  EXPECT_FALSE(IsPlottedTrainBatch(0, 10, 2, 5, /*resumed=*/true));
  EXPECT_TRUE(IsPlottedTrainBatch(40, 10, 2, 5, /*resumed=*/true));
  EXPECT_FALSE(IsPlottedTrainBatch(3, 1, 10, 5, false));  // close_mosaic beyond the run: never
  EXPECT_FALSE(IsPlottedTrainBatch(40, 10, 0, 5, false));
}

TEST(BatchGrid, LabelsAreNamesOrIdsAndPredictionsCarryOneDecimal) {
  EXPECT_EQ(GridBoxLabel({0, 0, 0, 1, 1, 1, -1}, {"red", "green"}, false), "green");
  EXPECT_EQ(GridBoxLabel({0, 0, 0, 1, 1, 1, -1}, {"red", "green"}, true), "1");
  EXPECT_EQ(GridBoxLabel({0, 0, 0, 1, 1, 1, 0.87f}, {"red", "green"}, false), "green 0.9");
  EXPECT_EQ(GridBoxLabel({0, 0, 0, 1, 1, 7, 0.5f}, {"red"}, false), "7 0.5");
  // A 4-image batch of 64 px images: a 2 x 2 grid, column by column.
  std::vector<uint8_t> pixels(4 * 64 * 64 * 3);
  for (int i = 0; i < 4; ++i) std::fill(pixels.begin() + i * 64 * 64 * 3, pixels.begin() + (i + 1) * 64 * 64 * 3, 40 * (i + 1));
  Batch b;
  b.images = pixels.data();
  b.size = 4;
  b.height = b.width = 64;
  b.layout = ImageLayout::kNHWC;
  const cv::Mat grid = RenderBatchGrid(b, {"red"});
  ASSERT_EQ(grid.size(), cv::Size(128, 128));
  EXPECT_EQ(grid.at<cv::Vec3b>(32, 32)[0], 40);   // image 0 top left
  EXPECT_EQ(grid.at<cv::Vec3b>(96, 32)[0], 80);   // image 1 below it
  EXPECT_EQ(grid.at<cv::Vec3b>(32, 96)[0], 120);  // image 2 top right
}

TEST(Anchors, FromInputsEqualArangeAnchors) {
  const std::vector<at::Tensor> feats = {at::zeros({2, 5, 8, 6}), at::zeros({2, 5, 4, 3}), at::zeros({2, 5, 2, 2})};
  const std::vector<double> strides = {8, 16, 32};
  const Anchors a = MakeAnchors(feats, strides);
  const Anchors b = MakeAnchorsFromInputs(feats, strides);
  EXPECT_TRUE(at::equal(a.points, b.points));
  EXPECT_TRUE(at::equal(a.strides, b.strides));
}

}  // namespace
}  // namespace yc::trainer
