#include "libcache/source/dataset_spec.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

class DatasetSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "images/train");
    fs::create_directories(dir_ / "images/val");
  }
  // Writes data.yaml with `body` and loads it.
  Result<DatasetSpec> Load(const std::string& body) {
    WriteFile(yaml(), body);
    return LoadDatasetSpec(yaml());
  }
  std::string yaml() const { return (dir_ / "data.yaml").string(); }
  // The error text after the YAML path.
  std::string Error(const std::string& body) {
    Result<DatasetSpec> r = Load(body);
    EXPECT_FALSE(r.ok()) << body;
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), Status::Code::kDataError) << r.status().ToString();
    const std::string prefix = yaml() + ": ";
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind(prefix, 0), 0u) << m;
    return m.substr(std::min(prefix.size(), m.size()));
  }
  TempDir dir_;
};

TEST_F(DatasetSpecTest, NamesAsListOrMap) {
  Result<DatasetSpec> list = Load("train: images/train\nval: images/val\nnames: [cat, dog]\n");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(list->nc(), 2);
  EXPECT_EQ(list->root, dir_.path());
  EXPECT_EQ(list->source, fs::path(yaml()));
  ASSERT_EQ(list->splits.size(), 2u);
  EXPECT_EQ(list->splits[0].name, "train");
  EXPECT_EQ(list->splits[0].inputs, (std::vector<fs::path>{dir_ / "images/train"}));
  EXPECT_EQ(list->splits[1].name, "val");

  Result<DatasetSpec> map = Load("train: images/train\nval: images/val\nnc: 3\nnames:\n  2: c\n  0: a\n  1: b\n");
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(map->names, (std::vector<std::string>{"a", "b", "c"}));

  Result<DatasetSpec> nc_only = Load("train: images/train\nval: images/val\nnc: 2\n");
  ASSERT_TRUE(nc_only.ok());
  EXPECT_EQ(nc_only->names, (std::vector<std::string>{"class_0", "class_1"}));

  Result<DatasetSpec> numeric = Load("train: images/train\nval: images/val\nnames: [1, 2.5, yes]\n");
  ASSERT_TRUE(numeric.ok());
  EXPECT_EQ(numeric->names, (std::vector<std::string>{"1", "2.5", "yes"}));
}

TEST_F(DatasetSpecTest, PathKey) {
  fs::create_directories(dir_ / "ds/images/a");
  Result<DatasetSpec> s = Load("path: ds\ntrain: images/a\nval: images/a\nnames: [x]\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->root, dir_ / "ds");
  EXPECT_EQ(s->splits[0].inputs[0], dir_ / "ds/images/a");
  // "../x" that does not exist falls back to root/x (Ultralytics).
  Result<DatasetSpec> up = Load("path: ds\ntrain: ../images/a\nval: images/a\nnames: [x]\n");
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->splits[0].inputs[0], dir_ / "ds/images/a");
  // Absolute path.
  Result<DatasetSpec> abs = Load("path: " + (dir_ / "ds").string() + "\ntrain: images/a\nval: images/a\nnames: [x]\n");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->root, dir_ / "ds");
  const std::string missing = Error("path: nowhere\ntrain: images/a\nval: images/a\nnames: [x]\n");
  EXPECT_EQ(missing.rfind("path: 'nowhere' not found (tried ", 0), 0u) << missing;
  EXPECT_NE(missing.find((dir_ / "nowhere").string()), std::string::npos) << missing;  // the YAML's folder, tried last
}

// A relative `path:` as Ultralytics' check_det_dataset resolves it: the working directory first, then
// its datasets_dir; the YAML's folder is our fallback. The first candidate holding the splits wins.
TEST_F(DatasetSpecTest, RelativePathResolvesLikeUltralytics) {
  TempDir wd, config;
  ::setenv("YOLO_CONFIG_DIR", config.path().c_str(), 1);  // no user settings.json: datasets_dir = <wd>/datasets
  const std::string body = "path: ds\ntrain: images/a\nval: images/a\nnames: [x]\n";
  WriteFile(yaml(), body);
  fs::create_directories(dir_ / "ds/images/a");  // beside the YAML only
  Result<DatasetSpec> s = LoadDatasetSpec(yaml(), SpecOptions{wd.path()});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->root, dir_ / "ds");
  EXPECT_EQ(s->root_from, "the YAML's folder");

  fs::create_directories(wd / "datasets/ds/images/a");  // Ultralytics' datasets_dir beats the YAML's folder
  s = LoadDatasetSpec(yaml(), SpecOptions{wd.path()});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->root, wd / "datasets/ds");
  EXPECT_EQ(s->root_from, "Ultralytics' datasets_dir " + (wd / "datasets").string());

  fs::create_directories(wd / "ds/images");  // in the working directory but without the splits: skipped
  s = LoadDatasetSpec(yaml(), SpecOptions{wd.path()});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->root, wd / "datasets/ds");
  fs::create_directories(wd / "ds/images/a");  // now complete: the working directory wins
  s = LoadDatasetSpec(yaml(), SpecOptions{wd.path()});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->root, wd / "ds");
  EXPECT_EQ(s->root_from, "the working directory " + wd.path().string());
  EXPECT_EQ(s->splits[0].inputs[0], wd / "ds/images/a");

  // settings.json's datasets_dir is Ultralytics' when it has one.
  TempDir elsewhere;
  fs::create_directories(elsewhere / "ds/images/a");
  WriteFile(config / "settings.json", "{\"datasets_dir\": \"" + elsewhere.path().string() + "\"}");
  TempDir empty_wd;
  s = LoadDatasetSpec(yaml(), SpecOptions{empty_wd.path()});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->root, elsewhere / "ds");
  ::unsetenv("YOLO_CONFIG_DIR");
}

TEST_F(DatasetSpecTest, ListFilesAndYamlListsAndOptionalSplits) {
  WriteFile(dir_ / "train.txt", "./images/train/a.jpg\n");
  fs::create_directories(dir_ / "images/test");
  Result<DatasetSpec> s = Load(
      "train: [train.txt, images/val]\nvalidation: images/val\ntest: images/test\nminival:\nnames: {0: a}\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->splits.size(), 3u);
  EXPECT_EQ(s->splits[0].inputs, (std::vector<fs::path>{dir_ / "train.txt", dir_ / "images/val"}));
  EXPECT_EQ(s->splits[1].name, "val");
  EXPECT_EQ(s->splits[2].name, "test");
  ASSERT_NE(s->split("test"), nullptr);
  EXPECT_EQ(s->split("minival"), nullptr) << "an empty key is an absent split";
  EXPECT_EQ(Error("train: images/train\nval: images/val\ntest: nope.txt\nnames: [a]\n"),
            "test: 'nope.txt' not found (" + (dir_ / "nope.txt").string() + ")");
  WriteFile(dir_ / "notes.md", "x");
  EXPECT_EQ(Error("train: notes.md\nval: images/val\nnames: [a]\n"),
            "train: 'notes.md' is not a directory, an image or a .txt list");
}

TEST_F(DatasetSpecTest, ExactErrors) {
  EXPECT_EQ(Error("val: images/val\nnames: [a]\n"), "missing key 'train'");
  EXPECT_EQ(Error("train: images/train\nnames: [a]\n"), "missing key 'val'");
  EXPECT_EQ(Error("train: images/train\nval: images/val\n"), "missing key 'names' (or 'nc')");
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnc: 3\nnames: [a, b]\n"), "nc is 3 but names has 2 entries");
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnc: three\nnames: [a]\n"), "nc: 'three' is not a class count");
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnames: {0: a, 5: b}\n"),
            "names: 2 classes need indices 0-1, found 5");
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnames: {x: a}\n"), "names: key 'x' is not a class index");
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnames: [a, [b]]\n"), "names: entry 1 is not a name");
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnames: []\n"), "names: no classes");
  EXPECT_EQ(Error("train: {a: 1}\nval: images/val\nnames: [a]\n"), "train: expected a path or a list of paths");
  EXPECT_EQ(Error("train: images/nope\nval: images/val\nnames: [a]\n"),
            "train: 'images/nope' not found (" + (dir_ / "images/nope").string() + ")");
  EXPECT_EQ(Error("- just\n- a list\n"), "not a YAML mapping of dataset keys");
  EXPECT_EQ(Error(""), "not a YAML mapping of dataset keys");
}

TEST_F(DatasetSpecTest, BadSyntaxReportsLine) {
  EXPECT_EQ(Error("train: images/train\nval: images/val\nnames: [a, b\n"),
            "line 4: invalid YAML (end of sequence flow not found)");
  EXPECT_EQ(Error("train: images/train\n  val: x: y\n"), "line 2: invalid YAML (illegal map value)");
}

TEST_F(DatasetSpecTest, HostileYamlNeverCrashes) {
  for (const std::string& body : {std::string(100000, '['), std::string("a: &x [*x]\n"), std::string("\x00\xff\xfe", 3),
                                 std::string("train: !!binary AAAA\nval: *nope\n"), std::string("{{{{{{{{"),
                                 std::string("names: {0: a, 0: b}\ntrain: images/train\nval: images/val\n")}) {
    Result<DatasetSpec> r = Load(body);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Status::Code::kDataError) << r.status().ToString();
    }
  }
}

TEST_F(DatasetSpecTest, MissingArgumentIsNotFound) {
  Result<DatasetSpec> r = LoadDatasetSpec(dir_ / "nope.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(r.status().message(), (dir_ / "nope.yaml").string() + ": not found");
}

TEST(DatasetSpecDir, BareDirectories) {
  TempDir d;
  fs::create_directories(d / "images/val");
  fs::create_directories(d / "images/train");
  fs::create_directories(d / "images/extra");
  fs::create_directories(d / "images/.cache");
  Result<DatasetSpec> s = LoadDatasetSpec(d.path());
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->splits.size(), 3u);
  EXPECT_EQ(s->splits[0].name, "train");
  EXPECT_EQ(s->splits[1].name, "val");
  EXPECT_EQ(s->splits[2].name, "extra");
  EXPECT_EQ(s->splits[0].inputs, (std::vector<fs::path>{d / "images/train"}));
  EXPECT_TRUE(s->names.empty());

  TempDir flat;
  WriteFile(flat / "a.jpg", "x");
  Result<DatasetSpec> f = LoadDatasetSpec(flat.path());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->splits.size(), 1u);
  EXPECT_EQ(f->splits[0].name, "train");
  EXPECT_EQ(f->splits[0].inputs, (std::vector<fs::path>{flat.path()}));
}

// Issue 28: a folder holding a data YAML is that YAML (names and splits), picked as Ultralytics'
// find_dataset_yaml picks it; several without a preferred name are refused, naming them.
TEST(DatasetSpecDir, AFolderHoldingADataYamlIsReadAsIt) {
  TempDir d;
  fs::create_directories(d / "images/train");
  fs::create_directories(d / "images/val");
  fs::create_directories(d / "images/extra");
  WriteFile(d / "custom.yaml", "train: images/train\nval: images/val\nnames: [cat, dog]\n");
  Result<DatasetSpec> s = LoadDatasetSpec(d.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->names, (std::vector<std::string>{"cat", "dog"}));  // not class_0, class_1
  EXPECT_EQ(s->source, d / "custom.yaml");
  EXPECT_EQ(s->root_from, "the YAML's folder");
  ASSERT_EQ(s->splits.size(), 2u);  // the YAML's splits, not every images/* folder
  EXPECT_EQ(s->splits[1].name, "val");

  WriteFile(d / "other.yaml", "train: images/train\nval: images/val\nnames: [x]\n");
  Result<DatasetSpec> two = LoadDatasetSpec(d.path());
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), Status::Code::kDataError);
  EXPECT_NE(two.status().message().find("several YAML files (custom.yaml, other.yaml)"), std::string::npos)
      << two.status().ToString();
  WriteFile(d / "data.yaml", "train: images/train\nval: images/val\nnames: [bird]\n");
  Result<DatasetSpec> named = LoadDatasetSpec(d.path());
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->names, std::vector<std::string>{"bird"});
  // The folder's own name beats data.yaml, as Ultralytics prefers the YAML named like its folder.
  WriteFile(d / (d.path().filename().string() + ".yaml"), "train: images/train\nval: images/val\nnames: [own]\n");
  Result<DatasetSpec> own = LoadDatasetSpec(d.path());
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->names, std::vector<std::string>{"own"});

  // A YAML in the folder that is not a data YAML is an error naming it, not a silent bare folder.
  TempDir m;
  fs::create_directories(m / "images/train");
  WriteFile(m / "model.yaml", "nc: 3\n");
  Result<DatasetSpec> bad = LoadDatasetSpec(m.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find((m / "model.yaml").string() + ": missing key 'train'"), std::string::npos)
      << bad.status().ToString();
}

TEST(DatasetSpecCoco, Coco128) {
  YC_REQUIRE_SHARED(coco, "coco128");
  Result<DatasetSpec> s = LoadDatasetSpec(coco / "coco128.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->nc(), 80);
  EXPECT_EQ(s->names.front(), "person");
  EXPECT_EQ(s->names.back(), "toothbrush");
  EXPECT_EQ(s->names[9], "traffic light");
  EXPECT_EQ(s->root, coco.lexically_normal());
  ASSERT_EQ(s->splits.size(), 2u);
  EXPECT_EQ(s->splits[0].inputs[0], (coco / "images/train2017").lexically_normal());
}

}  // namespace
}  // namespace yc
