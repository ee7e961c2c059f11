// Inputs a user or a damaged cache can hand us that are not what they claim: FIFOs and devices where a
// file belongs (must be refused without blocking), and file names that are not UTF-8 (must be stored
// byte-exact and written as valid JSON).
#include <sys/stat.h>


#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/base/path_text.h"
#include "libcache/format/manifest.h"
#include "libcache/source/audit.h"
#include "libcache/source/dataset_spec.h"
#include "libcache/source/discover.h"
#include "libcache/source/problem.h"
#include "libcache/store/lmdb_store.h"
#include "libcache/verify/cache_verify.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/libcache/ingest_test_util.h"
#include "tests/libcache/within_two_seconds.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WithinTwoSeconds;
using testing::WriteFile;

void MakeFifo(const fs::path& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << path; }

SourceItem Item(const fs::path& root, const std::string& rel) {
  const fs::path image = root / rel;
  const fs::path label = LabelPathFor(image);
  return {image, label, rel, RelativePath(root, label)};
}

TEST(NotRegularFile, FifoLabelAndImageAreProblemsNotHangs) {
  TempDir d;
  fs::create_directories(d / "images");
  fs::create_directories(d / "labels");
  WriteFile(d / "images/a.jpg", testing::MakeJpeg(testing::Blocks(32, 32)));
  MakeFifo(d / "labels/a.txt");
  MakeFifo(d / "images/b.jpg");
  const ScannedImage a = WithinTwoSeconds([&] { return ScanImage(Item(d.path(), "images/a.jpg"), ScanOptions{}); });
  ASSERT_EQ(a.problems.size(), 1u);
  EXPECT_EQ(a.problems[0].code, ProblemCode::kNotRegularFile);
  EXPECT_EQ(a.problems[0].severity, Severity::kError);
  EXPECT_EQ(a.problems[0].file, "labels/a.txt");
  EXPECT_EQ(a.problems[0].message, "label is not a regular file (a FIFO)");
  EXPECT_TRUE(a.excluded);
  const ScannedImage b = WithinTwoSeconds([&] { return ScanImage(Item(d.path(), "images/b.jpg"), ScanOptions{}); });
  ASSERT_FALSE(b.problems.empty());
  EXPECT_EQ(b.problems[0].code, ProblemCode::kNotRegularFile);
  EXPECT_EQ(b.problems[0].file, "images/b.jpg");
  EXPECT_EQ(b.problems[0].message, "image is not a regular file (a FIFO)");
  EXPECT_TRUE(b.excluded);
}

TEST(NotRegularFile, FifoListFileAndYamlAreRefused) {
  TempDir d;
  fs::create_directories(d / "images");
  WriteFile(d / "images/a.jpg", testing::MakeJpeg(testing::Blocks(32, 32)));
  MakeFifo(d / "train.txt");
  DatasetSpec spec;
  spec.root = d.path();
  const Result<std::vector<SourceItem>> items =
      WithinTwoSeconds([&] { return ListSplitFiles(spec, SplitSpec{"train", {d / "train.txt"}}); });
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), Status::Code::kDataError);
  EXPECT_NE(items.status().message().find((d / "train.txt").string() + ": not a regular file (a FIFO)"), std::string::npos)
      << items.status().message();

  MakeFifo(d / "data.yaml");
  const Result<DatasetSpec> yaml = WithinTwoSeconds([&] { return LoadDatasetSpec(d / "data.yaml"); });
  ASSERT_FALSE(yaml.ok());
  EXPECT_NE(yaml.status().message().find("not a regular file (a FIFO)"), std::string::npos) << yaml.status().message();
}

TEST(NotRegularFile, FifoManifestAndLmdbAreRefused) {
  TempDir d;
  MakeFifo(d / kManifestFileName);
  const Result<Manifest> m = WithinTwoSeconds([&] { return ReadManifest(d.path()); });
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(ExitCodeFor(m.status()), kExitProblems);
  EXPECT_NE(m.status().message().find(std::string(kManifestFileName) + ": not a regular file (a FIFO)"), std::string::npos)
      << m.status().message();
  MakeFifo(d / "train.lmdb");
  const auto lmdb = WithinTwoSeconds([&] { return LmdbReader::Open(d / "train.lmdb"); });
  ASSERT_FALSE(lmdb.ok());
  EXPECT_NE(lmdb.status().message().find("not a regular file (a FIFO)"), std::string::npos) << lmdb.status().message();
}

TEST(NotRegularFile, CacheVerifyNamesAFifoShardAndStopsWhenCancelled) {
  TempDir dir;
  WriterOptions options;
  options.shard_size = 2 * 1024;
  const testing::TestCache built = testing::BuildTestCache(dir.path(), options, {{"train", 12}, {"val", 4}}, 8);
  std::atomic<bool> cancel{true};
  VerifyOptions vo;
  vo.cancel = &cancel;
  const VerifyReport stopped = VerifyCache(dir.path(), vo);
  EXPECT_TRUE(stopped.cancelled);
  EXPECT_EQ(stopped.records_checked, 0u);
  cancel = false;
  EXPECT_FALSE(VerifyCache(dir.path(), vo).cancelled);

  const fs::path shard = dir / built.manifest.FindSplit("train")->shards[0].file;
  fs::remove(shard);
  MakeFifo(shard);
  const VerifyReport report = WithinTwoSeconds([&] { return VerifyCache(dir.path()); });
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].ToString(), shard.string() + ": not a regular file (a FIFO)");
}

TEST(PathText, Utf8IsCheckedStrictly) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("images/caf\xc3\xa9.jpg"));
  EXPECT_TRUE(IsUtf8("\xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsUtf8("\xff.jpg"));
  EXPECT_FALSE(IsUtf8("caf\xe9.jpg"));           // Latin-1
  EXPECT_FALSE(IsUtf8("\xc0\xaf"));              // overlong '/'
  EXPECT_FALSE(IsUtf8("\xed\xa0\x80"));          // surrogate
  EXPECT_FALSE(IsUtf8("\xf4\x90\x80\x80"));      // past U+10FFFF
  EXPECT_FALSE(IsUtf8("\xe2\x82"));              // cut sequence
}

TEST(PathText, PrintableAndHexRoundTrip) {
  EXPECT_EQ(PrintableText("images/caf\xc3\xa9.jpg"), "images/caf\xc3\xa9.jpg");
  EXPECT_EQ(PrintableText("images/caf\xe9/\xff.jpg"), "images/caf\\xe9/\\xff.jpg");
  EXPECT_TRUE(IsUtf8(PrintableText("\xe2\x82\xff\xc3\xa9")));
  const std::string name("a\xff\x00z", 4);
  EXPECT_EQ(HexBytes(name), "61ff007a");
  std::string back;
  ASSERT_TRUE(HexToBytes(HexBytes(name), &back));
  EXPECT_EQ(back, name);
  EXPECT_FALSE(HexToBytes("abc", &back));
  EXPECT_FALSE(HexToBytes("zz", &back));
}

TEST(PathText, ProblemJsonKeepsTheExactName) {
  const Problem p{"train", "images/caf\xe9/\xff.jpg", "same bytes as images/\xfe.jpg", ProblemCode::kDuplicateImage,
                  Severity::kWarning};
  const nlohmann::json j = p;
  const std::string text = j.dump();  // would throw type_error 316 on invalid UTF-8
  const nlohmann::json parsed = nlohmann::json::parse(text);
  EXPECT_EQ(parsed["file"], "images/caf\\xe9/\\xff.jpg");
  EXPECT_EQ(parsed["message"], "same bytes as images/\\xfe.jpg");
  EXPECT_EQ(parsed["file_hex"], HexBytes(p.file));
  EXPECT_EQ(parsed.get<Problem>().file, p.file);
  const nlohmann::json plain = Problem{"train", "images/a.jpg", "m", ProblemCode::kTruncated, Severity::kError};
  EXPECT_FALSE(plain.contains("file_hex")) << "only names that are not UTF-8 carry the exact bytes";
}

TEST(PathText, ManifestSourcePathsRoundTripByteExact) {
  Manifest m;
  m.tool_version = "test";
  m.created = "2024-05-01T12:00:00Z";
  m.dataset_yaml = "/data/d.yaml";
  m.names = {"a"};
  m.imgsz = 64;
  m.shard_size = 1 << 20;
  SplitManifest s;
  s.name = "train";
  s.records = 2;
  s.shards = {{"train-00000.shard", 2, 4096, 1}};
  s.sources = {{"images/train/\xff.jpg", 10, 1, 2, 0}, {"images/caf\xe9/b.jpg", 11, 1, 3, 1}, {"images/ok.jpg", 12, 1, 4, -1}};
  m.splits = {s};
  const std::string text = SerializeManifest(m);
  ASSERT_TRUE(IsUtf8(text));
  EXPECT_NE(text.find("\"path\":\"images/train/\\\\xff.jpg\",\"path_hex\":\"" + HexBytes("images/train/\xff.jpg") + "\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\"path_hex\":\"" + HexBytes("images/ok.jpg")), std::string::npos) << "UTF-8 names have no path_hex";
  const Result<Manifest> back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->splits[0].sources.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back->splits[0].sources[i].path, s.sources[i].path);

  std::string broken = text;
  broken.replace(broken.find("\"path_hex\":\"") + 12, 2, "zz");
  const Result<Manifest> bad = ParseManifestContent(broken);  // past the checksum, which would catch it first
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("path_hex"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace yc
