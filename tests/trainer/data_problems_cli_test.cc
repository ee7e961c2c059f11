// Issue 28, part 3, through `yolocache-train` as a user runs it: at train and val start every split
// says how many images it kept and what it excluded and why (first files, share of the split), a
// share above 2% is a warning, and a split without labels or without a usable image stops with exit 1
// naming the reason, whether the cache was just built from a YAML or folder or given as it is. A
// dataset folder holding a data.yaml is read as that YAML (its class names, not class_0...).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "libcache/build/builder.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::CliRun;
using testing::TempDir;
using testing::YolocacheTrain;

// One epoch at 64 px on one CPU thread: a few seconds.
std::vector<std::string> TinyTrain(const std::string& data, const TempDir& tmp) {
  return {"train", "--data", data, "--model", "yolov8n", "--imgsz", "64", "--epochs", "1", "--batch", "8",
          "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--no-plots",
          "--out", (tmp / "run").string(), "--cache-dir", (tmp / "caches").string()};
}

std::vector<std::string> Images(const fs::path& folder) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(folder)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

fs::path LabelOf(const fs::path& data, const std::string& split, const std::string& image) {
  return data / "labels" / split / fs::path(image).replace_extension(".txt");
}

TEST(DataProblemsCli, Coco128SaysWhatEachSplitKeeps) {
  YC_REQUIRE_SHARED(coco, "coco128");
  TempDir tmp;
  CliRun t = YolocacheTrain(tmp, TinyTrain((coco / "coco128.yaml").string(), tmp));
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("data: train: 128 images: 128 kept (2 backgrounds), 0 excluded (0%)\n"
                       "data:   warnings (images kept): label-orphan 2\n"
                       "data: val: 128 images: 128 kept (0 backgrounds), 0 excluded (0%)\n"),
            std::string::npos)
      << t.out;
  EXPECT_EQ(t.err.find("warning"), std::string::npos) << t.err;
}

// A label with class >= nc drops that image (Ultralytics' "Label class 9 exceeds dataset class count
// 4": the image is ignored as corrupt, not just the row), said with the file; 1 of 8 is a warning.
TEST(DataProblemsCli, AClassBeyondNcIsNamedAndAFolderUsesItsYaml) {
  TempDir tmp;
  testing::TinySynthDataset(tmp / "data");
  const std::vector<std::string> train = Images(tmp / "data/images/train");
  ASSERT_EQ(train.size(), 8u);
  testing::WriteFile(LabelOf(tmp / "data", "train", train[1]), "9 0.5 0.5 0.2 0.2\n");
  CliRun t = YolocacheTrain(tmp, TinyTrain((tmp / "data").string(), tmp));  // the folder, not its data.yaml
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("from the YAML's folder)"), std::string::npos) << t.out;  // data.yaml was read
  EXPECT_NE(t.out.find("data: train: 8 images: 7 kept (0 backgrounds), 1 excluded (12.5%):\n"
                       "data:   label-class-out-of-range 1 (12.5%): images/train/" + train[1] + " (labels/train/" +
                       fs::path(train[1]).replace_extension(".txt").string() + ": line 1: class 9 >= nc 4)\n"),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.err.find("yolocache-train train: warning: 1 of the 8 images of split train (12.5%) are excluded, more "
                       "than 2% (label-class-out-of-range 1); they are not used (every file and reason: "),
            std::string::npos)
      << t.err;
  // The YAML's class names, not class_0..class_3 (the final table lists the val classes by name).
  EXPECT_NE(t.out.find("circle"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("class_0"), std::string::npos) << t.out;

  // val on a split whose every image goes: exit 1 with the reason, on stderr beside --json's stdout.
  for (const std::string& image : Images(tmp / "data/images/val"))
    testing::WriteFile(LabelOf(tmp / "data", "val", image), "0 0.5 0.5 0.2 0.2\n7 0.5 0.5 0.1 0.1\n");
  CliRun v = YolocacheTrain(tmp, {"val", "--weights", (tmp / "run/weights/last.pt").string(), "--data",
                                  (tmp / "data").string(), "--cache-dir", (tmp / "caches").string(), "--device", "cpu",
                                  "--threads", "1", "--json"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.err.find("data: val: 4 images: 0 kept (0 backgrounds), 4 excluded (100.0%):"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("yolocache-train val: error: split val: all 4 images are excluded (label-class-out-of-range 4): "
                       "no image of it can be used"),
            std::string::npos)
      << v.err;
  EXPECT_TRUE(v.out.empty()) << v.out;  // no metrics for a split with nothing in it
}

// No labels/ folder: 8 background images would train with box loss 0. Refused before training, from a
// YAML (cached first) and from the cache given as it is.
TEST(DataProblemsCli, NoLabelsFolderStopsBeforeTraining) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  fs::remove_all(tmp / "data/labels");
  const std::string first = Images(tmp / "data/images/train")[0];
  const std::string reason = "yolocache-train train: error: no labels found in split train: none of its 8 images has a "
                             "label file (images/train/" + first + " would have labels/train/" +
                             fs::path(first).replace_extension(".txt").string() + ";";
  CliRun t = YolocacheTrain(tmp, TinyTrain(yaml.string(), tmp));
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
  EXPECT_NE(t.err.find(reason), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("error: no labels found in split val"), std::string::npos) << t.err;  // both splits said
  EXPECT_NE(t.out.find("data: train: 8 images: 8 kept (8 backgrounds), 0 excluded (0%)"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("epoch 1"), std::string::npos) << t.out;
  EXPECT_FALSE(fs::exists(tmp / "run/weights"));

  BuildOptions b;
  b.source = yaml;
  b.out = tmp / "cache";
  b.imgsz = 64;
  b.threads = 1;
  ASSERT_TRUE(BuildCache(b).ok());
  std::vector<std::string> given = TinyTrain((tmp / "cache").string(), tmp);
  given.push_back("--no-val");  // only the train split is used, and said
  CliRun g = YolocacheTrain(tmp, given);
  EXPECT_EQ(g.exit_code, 1) << g.out << g.err;
  EXPECT_NE(g.err.find(reason), std::string::npos) << g.err;
  EXPECT_EQ(g.err.find("split val"), std::string::npos) << g.err;
  EXPECT_FALSE(fs::exists(tmp / "run/weights"));
}

}  // namespace
}  // namespace yc
