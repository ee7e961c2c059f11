#include "libcache/source/discover.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

std::vector<std::string> Rels(const std::vector<SourceItem>& items) {
  std::vector<std::string> out;
  for (const SourceItem& i : items) out.push_back(i.rel);
  return out;
}

TEST(Discover, LabelPathRule) {
  EXPECT_EQ(LabelPathFor("/d/images/train/a.jpg"), fs::path("/d/labels/train/a.txt"));
  // The LAST /images/ is replaced.
  EXPECT_EQ(LabelPathFor("/images/x/images/b.PNG"), fs::path("/images/x/labels/b.txt"));
  // No /images/: beside the image. Only the final extension changes.
  EXPECT_EQ(LabelPathFor("/d/pics/a.b.jpeg"), fs::path("/d/pics/a.b.txt"));
  // "images" as a file-name prefix is not a folder.
  EXPECT_EQ(LabelPathFor("/d/myimages/c.jpg"), fs::path("/d/myimages/c.txt"));
}

TEST(Discover, ImageExtensions) {
  for (const char* ok : {"a.jpg", "a.JPG", "a.jpeg", "a.png", "a.bmp", "a.tif", "a.TIFF", "a.webp", "a.mpo", "a.dng",
                         "a.pfm", "a.heic"}) {
    EXPECT_TRUE(IsImageFile(ok)) << ok;
  }
  for (const char* no : {"a.txt", "a.gif", "a", "a.jpg.bak", ".jpg"}) EXPECT_FALSE(IsImageFile(no)) << no;
}

TEST(Discover, DirectoryRecursiveSortedSkipsHidden) {
  TempDir d;
  for (const char* f : {"images/train/b.jpg", "images/train/a.PNG", "images/train/sub/c.jpeg", "images/train/notes.txt",
                        "images/train/.hidden.jpg", "images/train/.cache/d.jpg", "images/train/e.gif"}) {
    WriteFile(d / f, "x");
  }
  DatasetSpec spec;
  spec.root = d.path();
  const SplitSpec split{"train", {d / "images/train"}};
  Result<std::vector<SourceItem>> items = ListSplitFiles(spec, split);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  EXPECT_EQ(Rels(*items), (std::vector<std::string>{"images/train/a.PNG", "images/train/b.jpg",
                                                     "images/train/sub/c.jpeg"}));
  EXPECT_EQ((*items)[2].image, d / "images/train/sub/c.jpeg");
  EXPECT_EQ((*items)[2].label, d / "labels/train/sub/c.txt");
  EXPECT_EQ((*items)[2].label_rel, "labels/train/sub/c.txt");
}

TEST(Discover, SymlinkLoopsAreVisitedOnce) {
  TempDir d;
  WriteFile(d / "images/a.jpg", "x");
  fs::create_directory_symlink(d / "images", d / "images/loop");
  DatasetSpec spec;
  spec.root = d.path();
  Result<std::vector<SourceItem>> items = ListSplitFiles(spec, SplitSpec{"train", {d / "images"}});
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Rels(*items), (std::vector<std::string>{"images/a.jpg"}));
}

TEST(Discover, ListFilesAndMixedInputsDeduplicated) {
  TempDir d;
  WriteFile(d / "images/a.jpg", "x");
  WriteFile(d / "images/b.jpg", "x");
  WriteFile(d / "lists/train.txt",
            "./../images/a.jpg\r\nimages/b.jpg  \n\n" + (d / "images/a.jpg").string() + "\nimages/missing.jpg\nreadme.md\n");
  DatasetSpec spec;
  spec.root = d.path();
  Result<std::vector<SourceItem>> items =
      ListSplitFiles(spec, SplitSpec{"train", {d / "lists/train.txt", d / "images"}});
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  // Listed-but-missing files are kept (the scan reports them); non-images are dropped.
  EXPECT_EQ(Rels(*items), (std::vector<std::string>{"images/a.jpg", "images/b.jpg", "images/missing.jpg"}));

  Result<std::vector<SourceItem>> missing = ListSplitFiles(spec, SplitSpec{"val", {d / "nope"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), (d / "nope").string() + ": not found (split val)");
}

TEST(Discover, OrphanLabels) {
  TempDir d;
  WriteFile(d / "images/train/a.jpg", "x");
  WriteFile(d / "labels/train/a.txt", "");
  WriteFile(d / "labels/train/z.txt", "");
  WriteFile(d / "labels/train/classes.txt", "cat\n");
  WriteFile(d / "labels/train/shared.txt", "");
  WriteFile(d / "labels/train/notes.md", "");
  DatasetSpec spec;
  spec.root = d.path();
  Result<std::vector<SourceItem>> items = ListSplitFiles(spec, SplitSpec{"train", {d / "images/train"}});
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(FindOrphanLabels(*items),
            (std::vector<fs::path>{d / "labels/train/shared.txt", d / "labels/train/z.txt"}));
  // An image of another split that owns shared.txt.
  const std::vector<SourceItem> others{{d / "images/train/shared.jpg", d / "labels/train/shared.txt", "", ""}};
  EXPECT_EQ(FindOrphanLabels(*items, others), (std::vector<fs::path>{d / "labels/train/z.txt"}));
}

TEST(Discover, RelativePathOutsideRootIsAbsolute) {
  EXPECT_EQ(RelativePath("/r", "/r/images/a.jpg"), "images/a.jpg");
  EXPECT_EQ(RelativePath("/r", "/elsewhere/a.jpg"), "/elsewhere/a.jpg");
}

TEST(Discover, Coco128Train) {
  YC_REQUIRE_SHARED(coco, "coco128");
  Result<DatasetSpec> spec = LoadDatasetSpec(coco / "coco128.yaml");
  ASSERT_TRUE(spec.ok());
  Result<std::vector<SourceItem>> items = ListSplitFiles(*spec, spec->splits[0]);
  ASSERT_TRUE(items.ok());
  ASSERT_EQ(items->size(), 128u);
  EXPECT_EQ(items->front().rel, "images/train2017/000000000009.jpg");
  EXPECT_EQ(items->front().label_rel, "labels/train2017/000000000009.txt");
  const std::vector<fs::path> orphans = FindOrphanLabels(*items);
  ASSERT_EQ(orphans.size(), 2u);
  EXPECT_EQ(orphans[0].filename(), "000000000656.txt");
  EXPECT_EQ(orphans[1].filename(), "000000000659.txt");
}

}  // namespace
}  // namespace yc
