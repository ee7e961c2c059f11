#include "libcache/store/lmdb_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>
#include <lmdb.h>

#include "libcache/base/coding.h"
#include "libcache/base/mapped_file.h"
#include "libcache/verify/lmdb_verify.h"
#include "tests/libcache/storage_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::ConcurrentReadMismatches;
using testing::MakeRecords;
using testing::SynthRecord;
using testing::TempDir;

LmdbReaderOptions VerifyingChecksums() {
  LmdbReaderOptions options;
  options.verify_checksums = true;
  return options;
}

LmdbFileInfo WriteLmdb(const std::filesystem::path& path, const std::vector<std::string>& encoded,
                       const LmdbWriterOptions& options = {}, uint64_t* final_map_size = nullptr) {
  auto w = LmdbWriter::Create(path, options);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  for (const std::string& e : encoded) EXPECT_TRUE(w.value()->Add(e).ok());
  if (final_map_size != nullptr) *final_map_size = w.value()->map_size();
  LmdbFileInfo info;
  const Status s = w.value()->Finish(&info);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return info;
}

TEST(LmdbTest, RoundTripWithMapGrowthFromTinyMap) {
  TempDir dir;
  const auto records = MakeRecords(150, 1, 40);  // ~1-5 KB each: inline and overflow values
  std::vector<std::string> encoded;
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    encoded.push_back(records[i].Encode(i % 2 ? Codec{Codec::Kind::kZstd, 1} : Codec{}));
    total += encoded.back().size();
  }
  LmdbWriterOptions options;
  options.initial_map_size = 64 * 1024;  // far too small: must grow several times
  options.batch_records = 7;
  uint64_t map_size = 0;
  const LmdbFileInfo info = WriteLmdb(dir / "train.lmdb", encoded, options, &map_size);
  EXPECT_GT(map_size, total);
  EXPECT_EQ(info.records, records.size());
  EXPECT_EQ(info.bytes, std::filesystem::file_size(dir / "train.lmdb"));
  EXPECT_FALSE(std::filesystem::exists(dir / "train.lmdb-lock")) << "NOLOCK: no lock file";
  uint64_t hash = 0;
  ASSERT_TRUE(HashFile(dir / "train.lmdb", &hash, nullptr).ok());
  EXPECT_EQ(hash, info.checksum);

  auto reader = LmdbReader::Open(dir / "train.lmdb", VerifyingChecksums());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_EQ(reader.value()->size(), records.size());
  ScratchBuffer scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    RecordView v;
    ASSERT_TRUE(reader.value()->Read(i, &v, &scratch).ok()) << i;
    EXPECT_EQ(v.index, i);
    testing::ExpectViewMatches(v, records[i]);  // includes: boxes aligned for yc::Box
  }
  EXPECT_TRUE(VerifyLmdbRecords(dir / "train.lmdb").ok());
}

TEST(LmdbTest, RawValuesAreZeroCopyIntoTheMap) {
  TempDir dir;
  const auto records = MakeRecords(10, 2, 30);
  std::vector<std::string> encoded;
  for (const auto& r : records) encoded.push_back(r.Encode());
  WriteLmdb(dir / "z.lmdb", encoded);
  auto reader = LmdbReader::Open(dir / "z.lmdb");
  ASSERT_TRUE(reader.ok());
  ScratchBuffer scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    RecordView v;
    ASSERT_TRUE(reader.value()->Read(i, &v, &scratch).ok());
    const std::string_view value = reader.value()->value(i);
    EXPECT_GE(reinterpret_cast<const char*>(v.pixels), value.data());
    EXPECT_LT(reinterpret_cast<const char*>(v.pixels), value.data() + value.size());
  }
}

TEST(LmdbTest, ConcurrentReadsFromEightThreads) {
  TempDir dir;
  const auto records = MakeRecords(80, 3, 48, true);
  std::vector<std::string> encoded;
  for (size_t i = 0; i < records.size(); ++i) encoded.push_back(records[i].Encode(i % 3 ? Codec{Codec::Kind::kZstd, 1} : Codec{}));
  WriteLmdb(dir / "c.lmdb", encoded);
  auto reader = LmdbReader::Open(dir / "c.lmdb", VerifyingChecksums());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ConcurrentReadMismatches(*reader.value(), records, 2000), 0);
}

TEST(LmdbTest, EveryByteFlipInAStoredValueNamesTheRecord) {
  TempDir dir;
  const auto records = MakeRecords(6, 4, 5);
  std::vector<std::string> encoded;
  for (const auto& r : records) encoded.push_back(r.Encode());
  const std::filesystem::path path = dir / "f.lmdb";
  WriteLmdb(path, encoded);
  const std::string clean = testing::ReadFile(path);

  const size_t target = 3;
  const size_t at = clean.find(encoded[target]);
  ASSERT_NE(at, std::string::npos) << "value bytes are stored contiguously in data pages";
  ASSERT_EQ(clean.find(encoded[target], at + 1), std::string::npos);

  std::string bytes = clean;
  for (size_t k = 0; k < encoded[target].size(); ++k) {
    bytes[at + k] = static_cast<char>(bytes[at + k] ^ 0x04);
    testing::WriteFile(path, bytes);
    const LmdbVerifyResult result = VerifyLmdbRecords(path, /*isolate=*/k % 16 == 0);
    ASSERT_EQ(result.problems.size(), 1u) << "flip at value byte " << k;
    EXPECT_EQ(result.problems[0].record, static_cast<int64_t>(target)) << result.problems[0].message;
    EXPECT_EQ(result.records, records.size());
    if (k >= kRecordHeaderSize) {
      // Named by its source path (itself possibly the damaged bytes: then one character differs).
      EXPECT_EQ(result.problems[0].source.size(), records[target].source.size()) << "flip at value byte " << k;
    }
    // The hot-path reader with verification on refuses exactly that record.
    auto reader = LmdbReader::Open(path, VerifyingChecksums());
    ASSERT_TRUE(reader.ok());
    ScratchBuffer scratch;
    for (size_t i = 0; i < records.size(); ++i) {
      RecordView v;
      const Status s = reader.value()->Read(i, &v, &scratch);
      EXPECT_EQ(s.ok(), i != target) << "record " << i << " flip " << k << ": " << s.ToString();
    }
    bytes[at + k] = clean[at + k];
  }
}

TEST(LmdbTest, TruncatedOrForeignFilesAreErrorsNotCrashes) {
  TempDir dir;
  std::vector<std::string> encoded;
  for (const auto& r : MakeRecords(40, 5, 40)) encoded.push_back(r.Encode());
  WriteLmdb(dir / "t.lmdb", encoded);
  const std::string clean = testing::ReadFile(dir / "t.lmdb");
  ASSERT_GT(clean.size(), 4 * 4096u);
  for (size_t len : {size_t{0}, size_t{100}, size_t{4096}, size_t{8192}, size_t{8192 + 4096}, clean.size() / 2,
                     clean.size() - 4096}) {
    const std::filesystem::path p = dir / "cut.lmdb";
    testing::WriteFile(p, clean.substr(0, len));
    auto reader = LmdbReader::Open(p);
    EXPECT_FALSE(reader.ok()) << "truncated to " << len;
    EXPECT_FALSE(VerifyLmdbRecords(p).ok()) << "truncated to " << len;
  }
  testing::WriteFile(dir / "text.lmdb", std::string(20000, 'x'));
  EXPECT_FALSE(LmdbReader::Open(dir / "text.lmdb").ok());
  EXPECT_EQ(LmdbReader::Open(dir / "missing.lmdb").status().code(), Status::Code::kNotFound);
}

TEST(LmdbTest, KeysThatAreNotRecordIndexesAreCorruption) {
  TempDir dir;
  const std::string path = (dir / "k.lmdb").string();
  const std::string value = MakeRecords(1, 6)[0].Encode();
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_NOLOCK, 0644), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi dbi;
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), 0);
  for (uint64_t k : {uint64_t{0}, uint64_t{2}}) {  // a gap at 1
    uint8_t key_bytes[8];
    EncodeBigEndian64(key_bytes, k);
    MDB_val key{8, key_bytes}, val{value.size(), const_cast<char*>(value.data())};
    ASSERT_EQ(mdb_put(txn, dbi, &key, &val, 0), 0);
  }
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
  auto reader = LmdbReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), Status::Code::kCorruption);
  EXPECT_NE(reader.status().message().find("entry 1"), std::string::npos) << reader.status().message();
}

TEST(LmdbTest, DamagedBTreeIsReportedByVerifyWithoutCrashing) {
  TempDir dir;
  std::vector<std::string> encoded;
  for (const auto& r : MakeRecords(300, 7, 12)) encoded.push_back(r.Encode());
  const std::filesystem::path path = dir / "b.lmdb";
  WriteLmdb(path, encoded);
  const std::string clean = testing::ReadFile(path);
  // Random bytes anywhere after the two meta pages. Some of these make LMDB itself segfault or
  // abort while walking the tree (a few of these 100 with LMDB 0.9.24); the walk runs in a child
  // process, so this test process must survive every one and get a report instead.
  int flagged = 0, crashed = 0;
  for (int trial = 0; trial < 100; ++trial) {
    std::mt19937 rng(trial);
    std::string bytes = clean;
    const int n = 1 + trial % 50;
    for (int k = 0; k < n; ++k) bytes[8192 + rng() % (bytes.size() - 8192)] = static_cast<char>(rng());
    testing::WriteFile(path, bytes);
    const LmdbVerifyResult result = VerifyLmdbRecords(path, /*isolate=*/true);
    flagged += !result.ok();
    for (const auto& p : result.problems) crashed += p.message.find("B-tree is damaged") != std::string::npos;
  }
  EXPECT_GE(flagged, 90);
  std::printf("  damaged LMDB files flagged: %d/100, of which the LMDB walk crashed (contained): %d\n", flagged, crashed);
}

}  // namespace
}  // namespace yc
