#include "libcache/verify/cache_verify.h"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/cache.h"

#include "libcache/format/shard_format.h"
#include "libcache/store/shard_reader.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::BuildTestCache;
using testing::TempDir;
using testing::TestCache;

std::string Describe(const VerifyReport& r) {
  std::string s;
  for (const VerifyProblem& p : r.problems) s += "  " + p.ToString() + "\n";
  return s;
}

TEST(CacheVerifyTest, CleanCachesVerify) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    TempDir dir;
    WriterOptions options;
    options.backend = backend;
    options.shard_size = 8 * 1024;
    options.codec = Codec{Codec::Kind::kZstd, 1};
    BuildTestCache(dir.path(), options, {{"train", 40}, {"val", 9}}, 24, true);
    const VerifyReport report = VerifyCache(dir.path());
    EXPECT_TRUE(report.ok()) << Describe(report);
    EXPECT_EQ(report.records_checked, 49u);
    EXPECT_GT(report.bytes_checked, 0u);
  }
}

TEST(CacheVerifyTest, FlipsInASecondShardNameTheSplitRecord) {
  TempDir dir;
  WriterOptions options;
  options.shard_size = 2 * 1024;
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 12}}, 8);
  const auto& shards = built.manifest.FindSplit("train")->shards;
  ASSERT_GE(shards.size(), 2u);
  const std::filesystem::path path = dir / shards[1].file;
  const uint64_t first = shards[0].records;
  const std::string clean = testing::ReadFile(path);
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok());
  const auto index = reader.value()->index();
  reader.value().reset();  // unmap before rewriting the file

  std::string bytes = clean;
  int checked = 0;
  for (size_t pos = 0; pos < bytes.size(); pos += (pos < 64 || pos + 64 >= bytes.size()) ? 9 : 5) {
    bytes[pos] ^= 0x10;
    testing::WriteFile(path, bytes);
    const VerifyReport report = VerifyCache(dir.path());
    ASSERT_FALSE(report.ok()) << "flip at " << pos;
    int64_t expected_record = -1;
    for (size_t i = 0; i < index.size(); ++i)
      if (pos >= index[i].offset && pos < index[i].offset + index[i].size) expected_record = static_cast<int64_t>(first + i);
    const VerifyProblem& p = report.problems.front();
    EXPECT_EQ(p.record, expected_record) << "flip at " << pos << ": " << p.ToString();
    EXPECT_EQ(p.split, "train");
    EXPECT_NE(p.file.find(shards[1].file), std::string::npos);
    if (expected_record >= 0) {
      EXPECT_EQ(p.file_record, expected_record - static_cast<int64_t>(first));
    } else {
      // Not a record: the message says which structure it is.
      const bool named = p.message.rfind("header:", 0) == 0 || p.message.rfind("footer:", 0) == 0 ||
                         p.message.rfind("index:", 0) == 0 || p.message.rfind("padding:", 0) == 0;
      EXPECT_TRUE(named) << "flip at " << pos << ": " << p.message;
    }
    bytes[pos] = clean[pos];
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(CacheVerifyTest, LmdbValueFlipNamesRecordAndSource) {
  TempDir dir;
  WriterOptions options;
  options.backend = Backend::kLmdb;
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 8}}, 6);
  const std::filesystem::path path = dir / "train.lmdb";
  std::string bytes = testing::ReadFile(path);
  const std::string value = built.records.at("train")[5].Encode();
  const size_t at = bytes.find(value);
  ASSERT_NE(at, std::string::npos);
  bytes[at + value.size() - 1] ^= 0x01;  // last pixel byte
  testing::WriteFile(path, bytes);
  const VerifyReport report = VerifyCache(dir.path());
  ASSERT_EQ(report.problems.size(), 2u) << Describe(report);
  EXPECT_EQ(report.problems[0].record, -1);  // the whole-file checksum
  EXPECT_NE(report.problems[0].message.find("checksum"), std::string::npos);
  EXPECT_EQ(report.problems[1].record, 5);
  EXPECT_EQ(report.problems[1].source, built.records.at("train")[5].source);
  EXPECT_NE(report.problems[1].ToString().find("train.lmdb: record 5 [images/img_5.jpg]: checksum mismatch"), std::string::npos)
      << report.problems[1].ToString();
}

TEST(CacheVerifyTest, ReportsEveryProblemNotJustTheFirst) {
  TempDir dir;
  WriterOptions options;
  options.shard_size = 4 * 1024;
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 20}, {"val", 6}}, 10);
  const auto& train = built.manifest.FindSplit("train")->shards;
  const auto& val = built.manifest.FindSplit("val")->shards;
  ASSERT_GE(train.size(), 2u);
  std::filesystem::remove(dir / train[0].file);                  // missing
  std::string t1 = testing::ReadFile(dir / train[1].file);       // truncated
  testing::WriteFile(dir / train[1].file, t1.substr(0, t1.size() / 2));
  std::string v0 = testing::ReadFile(dir / val[0].file);         // two damaged records
  auto reader = ShardReader::OpenBuffer(reinterpret_cast<const uint8_t*>(v0.data()), v0.size(), "v0");
  ASSERT_TRUE(reader.ok());
  ASSERT_GE(reader.value()->size(), 3u);
  v0[reader.value()->index()[0].offset + 60] ^= 1;
  v0[reader.value()->index()[2].offset + reader.value()->index()[2].size - 1] ^= 1;
  reader.value().reset();
  testing::WriteFile(dir / val[0].file, v0);

  const VerifyReport report = VerifyCache(dir.path());
  const std::string text = Describe(report);
  ASSERT_GE(report.problems.size(), 4u) << text;
  EXPECT_NE(text.find(train[0].file + ": missing"), std::string::npos) << text;
  EXPECT_NE(text.find(train[1].file + ": size"), std::string::npos) << text;
  EXPECT_NE(text.find(val[0].file + ": record 0"), std::string::npos) << text;
  EXPECT_NE(text.find(val[0].file + ": record 2"), std::string::npos) << text;
}

TEST(CacheVerifyTest, BadManifestIsOneProblem) {
  TempDir dir;
  BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}});
  testing::WriteFile(dir / "manifest.json", "{\"format\": \"yolocache\", \"format_version\": 1}");
  const VerifyReport report = VerifyCache(dir.path());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].file.find("manifest.json"), std::string::npos);
  EXPECT_NE(report.problems[0].message.find("tool_version"), std::string::npos) << report.problems[0].message;
  EXPECT_FALSE(VerifyCache(dir / "missing").ok());
}

TEST(CacheVerifyTest, ManifestChecksumMismatchOnAnIntactShard) {
  TempDir dir;
  TestCache built = BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}});
  built.manifest.splits[0].shards[0].checksum ^= 1;
  ASSERT_TRUE(WriteManifest(dir.path(), built.manifest).ok());
  const VerifyReport report = VerifyCache(dir.path());
  ASSERT_EQ(report.problems.size(), 1u) << Describe(report);
  EXPECT_NE(report.problems[0].message.find("stale or replaced"), std::string::npos);
}

// Flips `bit` of byte `offset` in `path`.
void FlipBit(const std::filesystem::path& path, size_t offset, int bit) {
  std::string bytes = testing::ReadFile(path);
  bytes[offset] = static_cast<char>(bytes[offset] ^ (1 << bit));
  testing::WriteFile(path, bytes);
}

// 200 seeded single-bit flips in manifest.json and 100 in audit.json: every one is a problem that
// names the file (before the checksums, 75 of 300 and all 150 went through).
TEST(CacheVerifyTest, EverySingleBitFlipInTheMetadataIsCaught) {
  TempDir dir;
  TestCache built = BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}, {"val", 2}});
  testing::AddAuditReport(dir.path(), &built);
  ASSERT_TRUE(VerifyCache(dir.path()).ok());
  std::mt19937 rng(1818);
  for (const auto& [name, flips] : {std::pair<std::string, int>{"manifest.json", 200}, {"audit.json", 100}}) {
    const std::filesystem::path path = dir / name;
    const std::string original = testing::ReadFile(path);
    for (int k = 0; k < flips; ++k) {
      const size_t offset = rng() % original.size();
      const int bit = static_cast<int>(rng() % 8);
      FlipBit(path, offset, bit);
      const VerifyReport report = VerifyCache(dir.path());
      ASSERT_FALSE(report.ok()) << name << ": bit " << bit << " of byte " << offset << " flipped, verify says OK";
      EXPECT_NE(report.problems[0].file.find(name), std::string::npos) << Describe(report);
      EXPECT_FALSE(Cache::Open(dir.path()).ok()) << name << ": bit " << bit << " of byte " << offset;
      testing::WriteFile(path, original);
    }
  }
  EXPECT_TRUE(VerifyCache(dir.path()).ok());
}

TEST(CacheVerifyTest, AHostileManifestIsOneProblemAndNothingIsRead) {
  for (testing::HostileFile kind : testing::kHostileFiles) {
    SCOPED_TRACE(testing::HostileFileName(kind));
    TempDir dir;
    BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}});
    const std::filesystem::path manifest = dir / "manifest.json";
    testing::MakeHostile(manifest, kind);
    EXPECT_TRUE(LooksLikeCacheDir(dir.path()));
    testing::ExpectReturnsWithin(std::chrono::seconds(20), manifest, [&] {
      const VerifyReport report = VerifyCache(dir.path());
      ASSERT_EQ(report.problems.size(), 1u) << Describe(report);
      EXPECT_EQ(report.problems[0].file, manifest.string());
      if (kind == testing::HostileFile::kMissing) {
        EXPECT_NE(report.problems[0].message.find("missing"), std::string::npos) << report.problems[0].message;
      }
    });
  }
}

TEST(CacheVerifyTest, HostileDataFilesAreReportedNotRead) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    for (testing::HostileFile kind : {testing::HostileFile::kDirectory, testing::HostileFile::kFifo,
                                      testing::HostileFile::kDevZero}) {
      SCOPED_TRACE(std::string(BackendName(backend)) + ", " + testing::HostileFileName(kind));
      TempDir dir;
      WriterOptions options;
      options.backend = backend;
      TestCache built = BuildTestCache(dir.path(), options, {{"train", 3}});
      testing::AddAuditReport(dir.path(), &built);
      const SplitManifest& split = built.manifest.splits[0];
      const std::filesystem::path file = dir / (backend == Backend::kLmdb ? split.lmdb->file : split.shards[0].file);
      testing::MakeHostile(file, kind);
      testing::MakeHostile(dir / "audit.json", kind);
      testing::ExpectReturnsWithin(std::chrono::seconds(20), file, [&] {
        const VerifyReport report = VerifyCache(dir.path());
        const std::string text = Describe(report);
        ASSERT_EQ(report.problems.size(), 2u) << text;
        EXPECT_NE(text.find("audit.json: not a regular file"), std::string::npos) << text;
        EXPECT_NE(text.find(file.string() + ": not a regular file"), std::string::npos) << text;
      });
    }
  }
}

TEST(CacheVerifyTest, AnOldFormatManifestAsksForARebuild) {
  TempDir dir;
  TestCache built = BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}});
  built.manifest.format_version = 1;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(SerializeManifest(built.manifest));
  j.erase("manifest_checksum");
  testing::WriteFile(dir / "manifest.json", j.dump(2) + "\n");
  const VerifyReport report = VerifyCache(dir.path());
  ASSERT_EQ(report.problems.size(), 1u) << Describe(report);
  EXPECT_NE(report.problems[0].message.find("built by an older yolocache"), std::string::npos) << Describe(report);
  EXPECT_NE(report.problems[0].message.find("yolocache build"), std::string::npos) << Describe(report);
  auto cache = Cache::Open(dir.path());
  EXPECT_EQ(cache.status().code(), Status::Code::kUnsupported);
  EXPECT_NE(cache.status().message().find("built by an older yolocache"), std::string::npos) << cache.status().ToString();
}

// Box and background counts are checked against the records, so an edit is caught even by someone
// who rewrote the manifest with a fresh checksum.
TEST(CacheVerifyTest, EditedCountsAreCaughtEvenWithARecomputedChecksum) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    SCOPED_TRACE(BackendName(backend));
    TempDir dir;
    WriterOptions options;
    options.backend = backend;
    options.shard_size = 8 * 1024;
    TestCache built = BuildTestCache(dir.path(), options, {{"train", 12}, {"val", 3}});
    ASSERT_TRUE(VerifyCache(dir.path()).ok()) << Describe(VerifyCache(dir.path()));
    built.manifest.splits[0].boxes += 1;
    built.manifest.splits[1].backgrounds = built.manifest.splits[1].backgrounds == 0 ? 1 : 0;
    ASSERT_TRUE(WriteManifest(dir.path(), built.manifest).ok());
    ASSERT_TRUE(ReadManifest(dir.path()).ok());
    const VerifyReport report = VerifyCache(dir.path());
    const std::string text = Describe(report);
    ASSERT_EQ(report.problems.size(), 2u) << text;
    EXPECT_NE(text.find("manifest.json: splits.train.boxes: says"), std::string::npos) << text;
    EXPECT_NE(text.find("manifest.json: splits.val.backgrounds: says"), std::string::npos) << text;
  }
}

TEST(CacheVerifyTest, LooksLikeCacheDirTellsCachesFromDatasets) {
  TempDir dir;
  EXPECT_FALSE(LooksLikeCacheDir(dir.path()));
  EXPECT_FALSE(LooksLikeCacheDir(dir / "absent"));
  std::filesystem::create_directories(dir / "images" / "train");
  testing::WriteFile(dir / "data.yaml", "path: .\ntrain: images/train\nnames: [a]\n");
  EXPECT_FALSE(LooksLikeCacheDir(dir.path()));
  EXPECT_FALSE(LooksLikeCacheDir(dir / "data.yaml"));
  for (const char* name : {"train-00000.shard", "val.lmdb", "audit.json", "manifest.json.tmp", "manifest.json"}) {
    SCOPED_TRACE(name);
    TempDir cache;
    testing::WriteFile(cache / name, "x");
    EXPECT_TRUE(LooksLikeCacheDir(cache.path()));
  }
  TempDir dangling;
  std::filesystem::create_symlink(dangling / "nowhere", dangling / "manifest.json");
  EXPECT_TRUE(LooksLikeCacheDir(dangling.path()));
}

}  // namespace
}  // namespace yc
