// Issue 28, part 3: what a cache left out of each split and why, read back from the cache (manifest +
// audit.json), on the real coco128, on coco128 under a class count that drops most of it, on crafted
// sets (a label with class >= nc, no labels/ folder), and on caches that recorded less.
#include "libcache/exclusion_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "libcache/build/builder.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

fs::path Build(const fs::path& source, const fs::path& out) {
  BuildOptions b;
  b.source = source;
  b.out = out;
  b.imgsz = 64;
  b.threads = 1;
  Result<BuildReport> r = BuildCache(b);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return out;
}

ExclusionReport Read(const fs::path& cache, const std::vector<std::string>& splits = {"train", "val"}) {
  Result<ExclusionReport> r = ReadExclusionReport(cache, splits);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ExclusionReport{};
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

// The synthetic set's train images, sorted (their order in the split).
std::vector<std::string> TrainImages(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir / "images/train")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

fs::path LabelOf(const fs::path& dir, const std::string& image) {
  return dir / "labels/train" / fs::path(image).replace_extension(".txt");
}

TEST(ExclusionReport, Coco128KeepsEveryImageAndNamesItsQuirks) {
  YC_REQUIRE_SHARED(coco, "coco128");
  TempDir tmp;
  const ExclusionReport r = Read(Build(coco / "coco128.yaml", tmp / "cache"));
  ASSERT_EQ(r.splits.size(), 2u);
  EXPECT_EQ(r.audit_file, (tmp / "cache/audit.json").string());
  const SplitExclusions& train = r.splits[0];
  EXPECT_EQ(train.split, "train");
  EXPECT_EQ(train.images, 128u);
  EXPECT_EQ(train.records, 128u);
  EXPECT_EQ(train.backgrounds, 2u);  // 000000000250.jpg and 000000000508.jpg have no label file
  EXPECT_EQ(train.excluded, 0u);
  EXPECT_EQ(train.label_files, 126u);
  EXPECT_TRUE(train.causes.empty());
  EXPECT_EQ(train.warnings, (std::map<std::string, size_t>{{"label-orphan", 2}}));  // 2 labels without an image
  EXPECT_EQ(Joined(ExclusionLines(train)),
            "train: 128 images: 128 kept (2 backgrounds), 0 excluded (0%)\n"
            "  warnings (images kept): label-orphan 2\n");
  EXPECT_EQ(JudgeSplit(train).verdict, SplitVerdict::kOk);
  EXPECT_EQ(r.splits[1].split, "val");
  EXPECT_EQ(r.splits[1].records, 128u);
  EXPECT_EQ(JudgeSplit(r.splits[1]).verdict, SplitVerdict::kOk);
  EXPECT_EQ(Read(tmp / "cache", {"test", "val"}).splits.size(), 1u);  // a split the cache lacks is left out
}

// coco128 under 3 classes: every image with a class >= 3 is dropped, as Ultralytics drops it
// ("Label class 45 exceeds dataset class count 3"), and the report says so per file.
TEST(ExclusionReport, Coco128UnderThreeClassesIsMostlyExcluded) {
  YC_REQUIRE_SHARED(coco, "coco128");
  TempDir tmp;
  WriteFile(tmp / "three.yaml", "path: " + coco.string() +
                                    "\ntrain: images/train2017\nval: images/val2017\nnames: [person, bicycle, car]\n");
  const ExclusionReport r = Read(Build(tmp / "three.yaml", tmp / "cache"));
  ASSERT_EQ(r.splits.size(), 2u);
  const SplitExclusions& train = r.splits[0];
  EXPECT_EQ(train.images, 128u);
  EXPECT_EQ(train.excluded, 126u);  // every labelled image holds some class >= 3
  ASSERT_EQ(train.causes.size(), 1u);
  const ExclusionCause& c = train.causes[0];
  EXPECT_EQ(c.code, "label-class-out-of-range");
  EXPECT_EQ(c.images, 126u);
  EXPECT_EQ(c.examples, (std::vector<std::string>{"images/train2017/000000000009.jpg", "images/train2017/000000000025.jpg",
                                                  "images/train2017/000000000030.jpg"}));
  EXPECT_EQ(c.first_file, "labels/train2017/000000000009.txt");
  EXPECT_EQ(c.first_message.rfind("line 1: class 45 >= nc 3", 0), 0u) << c.first_message;
  const std::vector<std::string> lines = ExclusionLines(train);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "train: 128 images: 2 kept (2 backgrounds), 126 excluded (98.4%):");
  EXPECT_EQ(lines[1].rfind("  label-class-out-of-range 126 (98.4%): images/train2017/000000000009.jpg "
                           "(labels/train2017/000000000009.txt: line 1: class 45 >= nc 3",
                           0),
            0u)
      << lines[1];
  EXPECT_NE(lines[1].find("images/train2017/000000000030.jpg and 123 more"), std::string::npos) << lines[1];
  // The 2 kept images are backgrounds: nothing to learn from.
  const SplitFinding f = JudgeSplit(train);
  EXPECT_EQ(f.verdict, SplitVerdict::kError);
  EXPECT_EQ(f.reason.rfind("no labels found in split train: its 2 kept images have no boxes and the other 126 are "
                           "excluded (label-class-out-of-range 126)",
                           0),
            0u)
      << f.reason;
  const SplitFinding v = JudgeSplit(r.splits[1]);  // val2017 has no background: all 128 go
  EXPECT_EQ(v.verdict, SplitVerdict::kError);
  EXPECT_EQ(v.reason, "split val: all 128 images are excluded (label-class-out-of-range 128): no image of it can be used");
}

// A crafted set: one train label with a class >= nc drops that image only (1 of 8: a warning).
TEST(ExclusionReport, AClassBeyondNcDropsThatImage) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  const std::vector<std::string> images = TrainImages(tmp / "data");
  ASSERT_EQ(images.size(), 8u);
  WriteFile(LabelOf(tmp / "data", images[2]), "0 0.5 0.5 0.2 0.2\n9 0.5 0.5 0.3 0.3\n");
  const ExclusionReport r = Read(Build(yaml, tmp / "cache"));
  ASSERT_EQ(r.splits.size(), 2u);
  const SplitExclusions& train = r.splits[0];
  EXPECT_EQ(train.images, 8u);
  EXPECT_EQ(train.records, 7u);
  EXPECT_EQ(train.excluded, 1u);
  ASSERT_EQ(train.causes.size(), 1u);
  EXPECT_EQ(train.causes[0].code, "label-class-out-of-range");
  EXPECT_EQ(train.causes[0].examples, std::vector<std::string>{"images/train/" + images[2]});
  const std::vector<std::string> lines = ExclusionLines(train);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "  label-class-out-of-range 1 (12.5%): images/train/" + images[2] + " (labels/train/" +
                          fs::path(images[2]).replace_extension(".txt").string() + ": line 2: class 9 >= nc 4)");
  const SplitFinding f = JudgeSplit(train);
  EXPECT_EQ(f.verdict, SplitVerdict::kWarning);
  EXPECT_EQ(f.reason, "1 of the 8 images of split train (12.5%) are excluded, more than 2% (label-class-out-of-range 1)");
  EXPECT_EQ(JudgeSplit(r.splits[1]).verdict, SplitVerdict::kOk);
}

// A missing labels/ folder: every image a background, which is an error naming where labels go.
TEST(ExclusionReport, NoLabelsFolderIsAnError) {
  TempDir tmp;
  const fs::path yaml = testing::TinySynthDataset(tmp / "data");
  fs::remove_all(tmp / "data/labels");
  const ExclusionReport r = Read(Build(yaml, tmp / "cache"));
  ASSERT_EQ(r.splits.size(), 2u);
  const SplitExclusions& train = r.splits[0];
  EXPECT_EQ(train.backgrounds, 8u);
  EXPECT_EQ(train.label_files, 0u);
  const std::string first = TrainImages(tmp / "data")[0];
  const SplitFinding f = JudgeSplit(train);
  EXPECT_EQ(f.verdict, SplitVerdict::kError);
  EXPECT_EQ(f.reason.rfind("no labels found in split train: none of its 8 images has a label file (images/train/" + first +
                               " would have labels/train/" + fs::path(first).replace_extension(".txt").string() + ";",
                           0),
            0u)
      << f.reason;
  EXPECT_EQ(JudgeSplit(r.splits[1]).verdict, SplitVerdict::kError);

  // Label files that are all empty: the same error, with the other reason.
  fs::create_directories(tmp / "data/labels/train");
  for (const std::string& image : TrainImages(tmp / "data")) WriteFile(LabelOf(tmp / "data", image), "");
  const ExclusionReport empty = Read(Build(yaml, tmp / "cache2"));
  const SplitFinding e = JudgeSplit(empty.splits[0]);
  EXPECT_EQ(e.verdict, SplitVerdict::kError);
  EXPECT_NE(e.reason.find("its 8 label files hold no boxes"), std::string::npos) << e.reason;
}

// The warning threshold is a share of the split: 2 of 100 is within it, 3 of 100 is not.
TEST(ExclusionReport, WarnsAboveTheThreshold) {
  SplitExclusions s;
  s.split = "train";
  s.images = 100;
  s.boxes = 500;
  s.excluded = 2;
  s.records = 98;
  EXPECT_EQ(JudgeSplit(s).verdict, SplitVerdict::kOk);
  s.excluded = 3;
  s.records = 97;
  EXPECT_EQ(JudgeSplit(s).verdict, SplitVerdict::kWarning);
  s.images = s.records = s.excluded = 0;
  EXPECT_EQ(JudgeSplit(s).verdict, SplitVerdict::kError);
  EXPECT_EQ(JudgeSplit(s).reason, "split train has no images");
}

// A cache that recorded less still reports what it has: names without reasons (no audit.json), a count
// without names (no fingerprints), and an error about a folder rather than an image.
TEST(ExclusionReport, CachesThatRecordedLess) {
  Manifest m;
  m.dataset_root = "/data/ds";
  SplitManifest s;
  s.name = "train";
  s.records = 2;
  s.boxes = 3;
  s.excluded = 1;
  s.sources = {{"images/a.jpg", 1, 1, 1, 0, true}, {"images/b.jpg", 1, 1, 1, -1, true}, {"images/c.jpg", 1, 1, 1, 1, false}};
  m.splits.push_back(s);
  ExclusionReport bare = BuildExclusionReport(m, nullptr, {"train"});
  ASSERT_EQ(bare.splits.size(), 1u);
  ASSERT_EQ(bare.splits[0].causes.size(), 1u);
  EXPECT_EQ(bare.splits[0].causes[0].code, "unrecorded");
  EXPECT_EQ(bare.splits[0].causes[0].examples, std::vector<std::string>{"images/b.jpg"});
  EXPECT_EQ(bare.splits[0].label_files, 1u);  // of the kept images

  // The audit names b's label as the reason; a damaged entry and another split's are skipped; an
  // unreadable folder is an error about no image.
  const nlohmann::json audit = {
      {"problems",
       {{{"split", "train"}, {"file", "labels/b.txt"}, {"severity", "error"}, {"code", "label-columns"}, {"message", "line 1: 4 values"}},
        {{"split", "train"}, {"file", 7}, {"severity", "error"}, {"code", "corrupt-data"}},
        {{"split", "val"}, {"file", "images/b.jpg"}, {"severity", "error"}, {"code", "truncated"}, {"message", "cut"}},
        {{"split", "train"}, {"file", "images/sub"}, {"severity", "error"}, {"code", "unreadable"}, {"message", "Permission denied"}},
        {{"split", "train"}, {"file", "images/a.jpg"}, {"severity", "warning"}, {"code", "duplicate-image"}, {"message", "same"}}}}};
  ExclusionReport full = BuildExclusionReport(m, &audit, {"train"});
  const SplitExclusions& t = full.splits[0];
  ASSERT_EQ(t.causes.size(), 1u);
  EXPECT_EQ(t.causes[0].code, "label-columns");
  EXPECT_EQ(t.causes[0].first_file, "labels/b.txt");
  ASSERT_EQ(t.split_errors.size(), 1u);
  EXPECT_EQ(t.split_errors[0].file, "images/sub");
  EXPECT_EQ(t.warnings, (std::map<std::string, size_t>{{"duplicate-image", 1}}));
  EXPECT_EQ(Joined(ExclusionLines(t)),
            "train: 3 images: 2 kept (0 backgrounds), 1 excluded (33.3%):\n"
            "  label-columns 1 (33.3%): images/b.jpg (labels/b.txt: line 1: 4 values)\n"
            "  unreadable: images/sub (Permission denied): its images are not in the split\n"
            "  warnings (images kept): duplicate-image 1\n");

  m.splits[0].sources.clear();  // no fingerprints at all: the count alone
  ExclusionReport counted = BuildExclusionReport(m, nullptr, {"train"});
  ASSERT_EQ(counted.splits[0].causes.size(), 1u);
  EXPECT_EQ(counted.splits[0].causes[0].images, 1u);
  EXPECT_EQ(ExclusionLines(counted.splits[0])[1], "  unrecorded 1 (33.3%): the cache names no files");
}

}  // namespace
}  // namespace yc
