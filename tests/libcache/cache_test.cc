#include "libcache/cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "libcache/base/coding.h"
#include "libcache/format/shard_format.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::BuildTestCache;
using testing::HostileFile;
using testing::ConcurrentReadMismatches;
using testing::TempDir;
using testing::TestCache;

void ExpectAllReadable(const Cache& cache, const TestCache& built) {
  ScratchBuffer scratch;
  for (const auto& [name, records] : built.records) {
    const RecordSource* source = cache.split(name);
    ASSERT_NE(source, nullptr) << name;
    ASSERT_EQ(source->size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      RecordView v;
      const Status s = source->Read(i, &v, &scratch);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(v.index, i);
      testing::ExpectViewMatches(v, records[i]);
    }
  }
}

TEST(CacheTest, ShardCacheRollsOverAtShardSizeAndReadsBack) {
  TempDir dir;
  WriterOptions options;
  options.shard_size = 8 * 1024;  // a few records per shard
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 60}, {"val", 7}, {"empty", 0}});
  const SplitManifest& train = *built.manifest.FindSplit("train");
  EXPECT_GT(train.shards.size(), 3u);
  for (const ShardEntry& e : train.shards) {
    EXPECT_LE(e.bytes, options.shard_size) << e.file;
    EXPECT_EQ(e.bytes, std::filesystem::file_size(dir / e.file));
  }
  EXPECT_EQ(built.manifest.FindSplit("empty")->shards.size(), 0u);
  EXPECT_TRUE(std::filesystem::exists(dir / "train-00000.shard"));

  auto cache = Cache::Open(dir.path(), OpenOptions{/*verify_checksums=*/true, /*verify_files=*/true});
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ(cache.value()->splits(), (std::vector<std::string>{"train", "val", "empty"}));
  EXPECT_EQ(cache.value()->split("test"), nullptr);
  EXPECT_EQ(cache.value()->split("empty")->size(), 0u);
  ExpectAllReadable(*cache.value(), built);
  EXPECT_EQ(cache.value()->manifest().names, built.manifest.names);
  RecordView v;
  ScratchBuffer scratch;
  EXPECT_EQ(cache.value()->split("val")->Read(7, &v, &scratch).code(), Status::Code::kInvalidArgument);
}

TEST(CacheTest, ZstdShardCache) {
  TempDir dir;
  WriterOptions options;
  options.codec = Codec{Codec::Kind::kZstd, 3};
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 20}}, 64, /*smooth=*/true);
  auto cache = Cache::Open(dir.path());
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  ExpectAllReadable(*cache.value(), built);
}

TEST(CacheTest, LmdbCacheReadsBack) {
  TempDir dir;
  WriterOptions options;
  options.backend = Backend::kLmdb;
  options.lmdb_initial_map_size = 128 * 1024;
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 90}, {"val", 5}, {"empty", 0}});
  EXPECT_TRUE(std::filesystem::exists(dir / "train.lmdb"));
  EXPECT_TRUE(built.manifest.FindSplit("train")->lmdb.has_value());
  auto cache = Cache::Open(dir.path(), OpenOptions{true, true});
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ(cache.value()->manifest().backend, Backend::kLmdb);
  ExpectAllReadable(*cache.value(), built);
}

// Zstd records in 16 KiB shards (or one LMDB file): many data files from a few records.
WriterOptions SmallZstdShards(Backend backend) {
  WriterOptions options;
  options.backend = backend;
  options.shard_size = 16 * 1024;
  options.codec = Codec{Codec::Kind::kZstd, 1};
  return options;
}

// Read-ahead and the windowed order rely on Extent naming exactly a record's bytes in its data file.
TEST(CacheTest, ExtentsNameEachRecordsBytesInItsDataFile) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    TempDir dir;
    const WriterOptions options = SmallZstdShards(backend);
    const TestCache built = BuildTestCache(dir.path(), options, {{"train", 40}}, 40, true);
    auto cache = Cache::Open(dir.path());
    ASSERT_TRUE(cache.ok());
    const RecordSource* train = cache.value()->split("train");
    const SplitManifest& split = *built.manifest.FindSplit("train");
    std::vector<std::filesystem::path> files;
    uint64_t total = 0;
    for (const ShardEntry& e : split.shards) files.push_back(dir / e.file);
    if (split.lmdb) files.push_back(dir / split.lmdb->file);
    for (const auto& f : files) total += std::filesystem::file_size(f);
    EXPECT_EQ(train->data_bytes(), total) << BackendName(backend);
    if (backend == Backend::kShards) {
      EXPECT_GT(files.size(), 1u);
    }
    ScratchBuffer scratch;
    for (size_t i = 0; i < train->size(); ++i) {
      RecordExtent extent;
      ASSERT_TRUE(train->Extent(i, &extent)) << BackendName(backend) << " record " << i;
      ASSERT_LT(extent.file, files.size());
      ASSERT_LE(extent.offset + extent.length, std::filesystem::file_size(files[extent.file]));
      std::vector<uint8_t> bytes(extent.length);
      FILE* f = std::fopen(files[extent.file].c_str(), "rb");
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(std::fseek(f, static_cast<long>(extent.offset), SEEK_SET), 0);
      ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
      std::fclose(f);
      RecordView v;
      const Status s = DecodeRecord(bytes.data(), bytes.size(), /*verify_checksum=*/true, &v, &scratch);
      ASSERT_TRUE(s.ok()) << BackendName(backend) << " record " << i << ": " << s.ToString();
      testing::ExpectViewMatches(v, built.records.at("train")[i]);
      // The window stage reads the same bytes itself (O_DIRECT) and decodes them with ReadStored.
      EXPECT_EQ(train->DataFilePath(extent.file), files[extent.file].string());
      RecordView stored;
      ASSERT_TRUE(train->ReadStored(i, bytes.data(), &stored, &scratch).ok()) << BackendName(backend) << " " << i;
      EXPECT_EQ(stored.index, i);
      testing::ExpectViewMatches(stored, built.records.at("train")[i]);
    }
    RecordExtent past;
    EXPECT_FALSE(train->Extent(train->size(), &past));
    RecordView v;
    std::vector<uint8_t> none(16);
    EXPECT_FALSE(train->ReadStored(train->size(), none.data(), &v, &scratch).ok());
    EXPECT_TRUE(train->DataFilePath(static_cast<uint32_t>(files.size())).empty());
  }
}

// ReadStored checks the copy it is given as Read checks the mapping: a damaged byte in a staged
// record is a Corruption naming the file and record, never a silently wrong image.
TEST(CacheTest, ReadStoredRejectsADamagedCopy) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    TempDir dir;
    BuildTestCache(dir.path(), SmallZstdShards(backend), {{"train", 8}}, 40, true);
    auto cache = Cache::Open(dir.path());  // verify_first_read: the first decode of a record hashes it
    ASSERT_TRUE(cache.ok());
    const RecordSource* train = cache.value()->split("train");
    RecordExtent extent;
    ASSERT_TRUE(train->Extent(3, &extent));
    std::vector<uint8_t> bytes(extent.length);
    FILE* f = std::fopen(train->DataFilePath(extent.file).c_str(), "rb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fseek(f, static_cast<long>(extent.offset), SEEK_SET), 0);
    ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
    bytes[bytes.size() - 1] ^= 0x40;
    RecordView v;
    ScratchBuffer scratch;
    const Status s = train->ReadStored(3, bytes.data(), &v, &scratch);
    ASSERT_FALSE(s.ok()) << BackendName(backend);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
    EXPECT_NE(s.message().find("record 3"), std::string::npos) << s.ToString();
  }
}

TEST(CacheTest, ConcurrentReadsFromEightThreadsAcrossShards) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    TempDir dir;
    const WriterOptions options = SmallZstdShards(backend);
    const TestCache built = BuildTestCache(dir.path(), options, {{"train", 120}}, 40, true);
    auto cache = Cache::Open(dir.path(), OpenOptions{true});
    ASSERT_TRUE(cache.ok());
    const RecordSource* train = cache.value()->split("train");
    EXPECT_EQ(ConcurrentReadMismatches(*train, built.records.at("train"), 1500), 0) << BackendName(backend);
  }
}

TEST(CacheTest, OpenNamesMissingAndMismatchedFiles) {
  TempDir dir;
  WriterOptions options;
  options.shard_size = 8 * 1024;
  const TestCache built = BuildTestCache(dir.path(), options, {{"train", 30}});
  const auto& shards = built.manifest.FindSplit("train")->shards;
  ASSERT_GE(shards.size(), 2u);
  const std::filesystem::path first = dir / shards[0].file, second = dir / shards[1].file;

  // Missing shard: NotFound naming it.
  std::filesystem::rename(second, dir / "moved");
  auto cache = Cache::Open(dir.path());
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), Status::Code::kNotFound);
  EXPECT_NE(cache.status().message().find(shards[1].file), std::string::npos) << cache.status().message();
  std::filesystem::rename(dir / "moved", second);
  ASSERT_TRUE(Cache::Open(dir.path()).ok());

  // Two shards swapped: each is intact, but not the file the manifest names.
  std::filesystem::rename(first, dir / "tmp");
  std::filesystem::rename(second, first);
  std::filesystem::rename(dir / "tmp", second);
  cache = Cache::Open(dir.path());
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), Status::Code::kCorruption) << cache.status().ToString();
  std::filesystem::rename(first, dir / "tmp");
  std::filesystem::rename(second, first);
  std::filesystem::rename(dir / "tmp", second);

  // Truncated shard.
  const std::string bytes = testing::ReadFile(first);
  testing::WriteFile(first, bytes.substr(0, bytes.size() - 10));
  cache = Cache::Open(dir.path());
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), Status::Code::kCorruption);
  EXPECT_NE(cache.status().message().find(shards[0].file), std::string::npos);

  // A flipped pixel byte passes the cheap open checks, is caught by verify_files at open and by
  // verify_checksums on read.
  std::string flipped = bytes;
  flipped[kShardHeaderSize + 70] ^= 1;  // inside record 0 (its pixels start at >= 128)
  testing::WriteFile(first, flipped);
  EXPECT_TRUE(Cache::Open(dir.path()).ok());
  EXPECT_EQ(Cache::Open(dir.path(), OpenOptions{false, true}).status().code(), Status::Code::kCorruption);
  auto checked = Cache::Open(dir.path(), OpenOptions{true});
  ASSERT_TRUE(checked.ok());
  ScratchBuffer scratch;
  int bad = 0;
  for (size_t i = 0; i < checked.value()->split("train")->size(); ++i) {
    RecordView v;
    const Status s = checked.value()->split("train")->Read(i, &v, &scratch);
    if (!s.ok()) {
      ++bad;
      EXPECT_EQ(s.code(), Status::Code::kCorruption);
      EXPECT_NE(s.message().find(shards[0].file), std::string::npos) << s.message();
    }
  }
  EXPECT_EQ(bad, 1);
  testing::WriteFile(first, bytes);

  // No manifest.
  std::filesystem::remove(dir / "manifest.json");
  EXPECT_EQ(Cache::Open(dir.path()).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(Cache::Open(dir / "absent").status().code(), Status::Code::kNotFound);
}

TEST(CacheTest, LmdbOpenNamesMissingAndResizedFiles) {
  TempDir dir;
  WriterOptions options;
  options.backend = Backend::kLmdb;
  BuildTestCache(dir.path(), options, {{"train", 10}});
  const std::string bytes = testing::ReadFile(dir / "train.lmdb");
  testing::WriteFile(dir / "train.lmdb", bytes + std::string(4096, '\0'));
  auto cache = Cache::Open(dir.path());
  EXPECT_EQ(cache.status().code(), Status::Code::kCorruption);
  EXPECT_NE(cache.status().message().find("train.lmdb"), std::string::npos);
  std::filesystem::remove(dir / "train.lmdb");
  cache = Cache::Open(dir.path());
  EXPECT_EQ(cache.status().code(), Status::Code::kNotFound);
  EXPECT_NE(cache.status().message().find("train.lmdb"), std::string::npos);
}

TEST(CacheTest, WriterRejectsMisuse) {
  TempDir dir;
  auto writer = CacheWriter::Create(dir.path(), WriterOptions{});
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE(writer.value()->AddEncoded("x").ok());
  EXPECT_FALSE(writer.value()->BeginSplit("../evil").ok());
  EXPECT_FALSE(writer.value()->BeginSplit("").ok());
  ASSERT_TRUE(writer.value()->BeginSplit("train").ok());
  EXPECT_FALSE(writer.value()->BeginSplit("val").ok());
  EXPECT_EQ(writer.value()->AddEncoded("garbage").code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(writer.value()->Finish().ok());
  SplitFiles files;
  ASSERT_TRUE(writer.value()->EndSplit(&files).ok());
  EXPECT_TRUE(files.shards.empty());
  EXPECT_TRUE(writer.value()->Finish().ok());
}

// manifest.json missing, a folder, a FIFO, a link to /dev/zero or followed by a 2 GB tail: Open fails
// at once, naming the file, and never reads without end.
TEST(CacheTest, OpenRefusesAHostileManifestWithoutReadingIt) {
  for (HostileFile kind : testing::kHostileFiles) {
    SCOPED_TRACE(testing::HostileFileName(kind));
    TempDir dir;
    BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}});
    const std::filesystem::path manifest = dir / "manifest.json";
    testing::MakeHostile(manifest, kind);
    testing::ExpectReturnsWithin(std::chrono::seconds(20), manifest, [&] {
      auto cache = Cache::Open(dir.path());
      ASSERT_FALSE(cache.ok());
      EXPECT_NE(cache.status().message().find(manifest.string()), std::string::npos) << cache.status().ToString();
      if (kind == HostileFile::kMissing) {
        EXPECT_EQ(cache.status().code(), Status::Code::kNotFound);
      }
    });
  }
}

// The same for a data file, on both backends (LMDB would block on a FIFO in mdb_env_open).
TEST(CacheTest, OpenRefusesAHostileDataFileWithoutReadingIt) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    for (HostileFile kind : testing::kHostileFiles) {
      SCOPED_TRACE(std::string(BackendName(backend)) + ", " + testing::HostileFileName(kind));
      TempDir dir;
      WriterOptions options;
      options.backend = backend;
      const TestCache built = BuildTestCache(dir.path(), options, {{"train", 3}});
      const SplitManifest& split = built.manifest.splits[0];
      const std::filesystem::path file = dir / (backend == Backend::kLmdb ? split.lmdb->file : split.shards[0].file);
      testing::MakeHostile(file, kind);
      testing::ExpectReturnsWithin(std::chrono::seconds(20), file, [&] {
        for (bool verify_files : {false, true}) {
          OpenOptions o;
          o.verify_files = verify_files;
          auto cache = Cache::Open(dir.path(), o);
          ASSERT_FALSE(cache.ok());
          EXPECT_NE(cache.status().message().find(file.string()), std::string::npos) << cache.status().ToString();
        }
      });
    }
  }
}

// imgsz, a class name, a source hash, a box count edited in manifest.json: Open fails on its checksum.
TEST(CacheTest, OpenRefusesAnEditedManifest) {
  TempDir dir;
  TestCache built = BuildTestCache(dir.path(), WriterOptions{}, {{"train", 4}});
  testing::AddAuditReport(dir.path(), &built);
  ASSERT_TRUE(Cache::Open(dir.path()).ok());
  const std::filesystem::path path = dir / "manifest.json";
  const std::string original = testing::ReadFile(path);
  const std::string boxes = "\"boxes\": " + std::to_string(built.manifest.splits[0].boxes);
  const std::string hash = ChecksumToHex(built.manifest.splits[0].sources[1].hash);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"imgsz\": 24", "\"imgsz\": 4096"},
      {"\"class1\"", "\"person\""},
      {boxes, boxes + "1"},
      {hash, ChecksumToHex(built.manifest.splits[0].sources[1].hash + 1)},
  };
  for (const auto& [from, to] : edits) {
    std::string edited = original;
    const size_t at = edited.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    edited.replace(at, from.size(), to);
    testing::WriteFile(path, edited);
    auto cache = Cache::Open(dir.path());
    ASSERT_FALSE(cache.ok()) << from << " -> " << to;
    EXPECT_EQ(cache.status().code(), Status::Code::kCorruption);
    EXPECT_NE(cache.status().message().find(path.string() + ": manifest_checksum"), std::string::npos)
        << cache.status().ToString();
  }
}

// audit.json is checked on every open: edited, resized, missing or not a regular file.
TEST(CacheTest, OpenChecksTheAuditReport) {
  TempDir dir;
  TestCache built = BuildTestCache(dir.path(), WriterOptions{}, {{"train", 3}});
  testing::AddAuditReport(dir.path(), &built);
  ASSERT_TRUE(Cache::Open(dir.path()).ok());
  const std::filesystem::path audit = dir / "audit.json";
  const std::string bytes = testing::ReadFile(audit);
  std::string edited = bytes;
  edited[edited.find("warning")] = 'W';  // same size, different content
  testing::WriteFile(audit, edited);
  auto cache = Cache::Open(dir.path());
  EXPECT_EQ(cache.status().code(), Status::Code::kCorruption);
  EXPECT_NE(cache.status().message().find(audit.string() + ": checksum"), std::string::npos) << cache.status().ToString();
  testing::WriteFile(audit, bytes + "\n");
  cache = Cache::Open(dir.path());
  EXPECT_EQ(cache.status().code(), Status::Code::kCorruption);
  EXPECT_NE(cache.status().message().find(audit.string() + ": size"), std::string::npos) << cache.status().ToString();
  for (HostileFile kind : testing::kHostileFiles) {
    SCOPED_TRACE(testing::HostileFileName(kind));
    testing::WriteFile(audit, bytes);
    testing::MakeHostile(audit, kind);
    testing::ExpectReturnsWithin(std::chrono::seconds(20), audit, [&] {
      auto c = Cache::Open(dir.path());
      ASSERT_FALSE(c.ok());
      EXPECT_NE(c.status().message().find(audit.string()), std::string::npos) << c.status().ToString();
    });
    std::filesystem::remove_all(audit);
  }
  testing::WriteFile(audit, bytes);
  EXPECT_TRUE(Cache::Open(dir.path()).ok());
}

}  // namespace
}  // namespace yc
