#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/format/shard_format.h"
#include "libcache/store/shard_reader.h"
#include "libcache/store/shard_writer.h"
#include "libcache/verify/shard_verify.h"
#include "tests/libcache/storage_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::ConcurrentReadMismatches;
using testing::MakeRecords;
using testing::SynthRecord;
using testing::TempDir;

ShardReaderOptions Checksums(bool verify) {
  ShardReaderOptions options;
  options.verify_checksums = verify;
  return options;
}

ShardInfo WriteShard(const std::filesystem::path& path, const std::vector<std::string>& encoded) {
  auto w = ShardWriter::Create(path);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  for (const std::string& e : encoded) EXPECT_TRUE(w.value()->Add(e).ok());
  const uint64_t expected_size = w.value()->bytes_written() + w.value()->finish_overhead();
  ShardInfo info;
  const Status s = w.value()->Finish(&info);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(info.bytes, expected_size);
  EXPECT_EQ(info.bytes, std::filesystem::file_size(path));
  return info;
}

std::vector<std::string> EncodeAll(const std::vector<SynthRecord>& records, const Codec& codec = {}) {
  std::vector<std::string> out;
  for (const SynthRecord& r : records) out.push_back(r.Encode(codec));
  return out;
}

TEST(ShardTest, RoundTripRawIsZeroCopyAndAligned) {
  TempDir dir;
  const auto records = MakeRecords(40, 1);
  const ShardInfo info = WriteShard(dir / "a.shard", EncodeAll(records));
  EXPECT_EQ(info.records, records.size());

  auto reader = ShardReader::Open(dir / "a.shard");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const ShardReader& r = *reader.value();
  ASSERT_EQ(r.size(), records.size());
  EXPECT_EQ(r.footer().shard_checksum, info.checksum);
  EXPECT_EQ(XXH3_64bits(r.data(), r.file_size() - kShardFooterSize), info.checksum);
  ScratchBuffer scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    RecordView v;
    ASSERT_TRUE(r.Read(i, &v, &scratch).ok());
    EXPECT_EQ(v.index, i);
    testing::ExpectViewMatches(v, records[i]);
    // Zero copy: straight into the mapping, at a 64-byte aligned address.
    EXPECT_GE(v.pixels, r.data());
    EXPECT_LT(v.pixels, r.data() + r.file_size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.pixels) % 64, 0u);
    EXPECT_EQ(r.index()[i].offset % 64, 0u);
  }
  EXPECT_TRUE(scratch.empty());
  RecordView v;
  EXPECT_EQ(r.Read(records.size(), &v, &scratch).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(VerifyShard(dir / "a.shard").ok());
}

TEST(ShardTest, RoundTripZstdWithVerification) {
  TempDir dir;
  const auto records = MakeRecords(25, 2, 64, /*smooth=*/true);
  WriteShard(dir / "z.shard", EncodeAll(records, Codec{Codec::Kind::kZstd, 5}));
  auto reader = ShardReader::Open(dir / "z.shard", Checksums(/*verify=*/true));
  ASSERT_TRUE(reader.ok());
  ScratchBuffer scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    RecordView v;
    ASSERT_TRUE(reader.value()->Read(i, &v, &scratch).ok());
    testing::ExpectViewMatches(v, records[i]);
  }
  const ShardVerifyResult result = VerifyShard(dir / "z.shard");
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.records, records.size());
  EXPECT_EQ(result.computed_checksum, result.stored_checksum);
}

TEST(ShardTest, EmptyShardIsValid) {
  TempDir dir;
  const ShardInfo info = WriteShard(dir / "e.shard", {});
  EXPECT_EQ(info.bytes, kShardHeaderSize + kShardFooterSize);
  auto reader = ShardReader::Open(dir / "e.shard");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader.value()->size(), 0u);
  EXPECT_TRUE(VerifyShard(dir / "e.shard").ok());
}

TEST(ShardTest, UnfinishedWriterLeavesNoFile) {
  TempDir dir;
  {
    auto w = ShardWriter::Create(dir / "partial.shard");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w.value()->Add(MakeRecords(1, 3)[0].Encode()).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "partial.shard"));
}

TEST(ShardTest, WriterRefusesMalformedRecords) {
  TempDir dir;
  auto w = ShardWriter::Create(dir / "m.shard");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.value()->Add("not a record").code(), Status::Code::kInvalidArgument);
}

TEST(ShardTest, ConcurrentReadsFromEightThreads) {
  TempDir dir;
  const auto records = MakeRecords(64, 4, 48);
  std::vector<std::string> encoded = EncodeAll(records);
  // Mix codecs within one shard: the reader must not care.
  const auto smooth = MakeRecords(32, 5, 48, true);
  for (const SynthRecord& r : smooth) encoded.push_back(r.Encode(Codec{Codec::Kind::kZstd, 1}));
  WriteShard(dir / "c.shard", encoded);
  std::vector<SynthRecord> expected = records;
  expected.insert(expected.end(), smooth.begin(), smooth.end());

  auto reader = ShardReader::Open(dir / "c.shard", Checksums(true));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ConcurrentReadMismatches(*reader.value(), expected, 2000), 0);
}

// Which part of the file a byte belongs to, from the writer's own layout.
struct Region {
  ShardProblem::Where where;
  int64_t record;
};

Region RegionOf(size_t pos, size_t file_size, const std::vector<ShardIndexEntry>& index, uint64_t index_offset) {
  if (pos < kShardHeaderSize) return {ShardProblem::Where::kHeader, -1};
  if (pos >= file_size - kShardFooterSize) return {ShardProblem::Where::kFooter, -1};
  if (pos >= index_offset) return {ShardProblem::Where::kIndex, -1};
  for (size_t i = 0; i < index.size(); ++i) {
    if (pos >= index[i].offset && pos < index[i].offset + index[i].size) return {ShardProblem::Where::kRecord, static_cast<int64_t>(i)};
    if (pos >= index[i].offset + index[i].size && pos < AlignUp(index[i].offset + index[i].size, 64))
      return {ShardProblem::Where::kPadding, static_cast<int64_t>(i)};
  }
  ADD_FAILURE() << "byte " << pos << " is in no region";
  return {ShardProblem::Where::kFile, -1};
}

TEST(ShardTest, EverySingleByteFlipIsDetectedAndLocated) {
  TempDir dir;
  std::mt19937 rng(6);
  std::vector<std::string> encoded;
  encoded.push_back(testing::MakeRecord(rng, 3, 5, 2, "a.jpg").Encode());
  encoded.push_back(testing::MakeRecord(rng, 4, 4, 0, "bb.jpg").Encode());
  encoded.push_back(testing::MakeRecord(rng, 8, 8, 1, "c.jpg", true).Encode(Codec{Codec::Kind::kZstd, 3}));
  WriteShard(dir / "f.shard", encoded);
  const std::string clean = testing::ReadFile(dir / "f.shard");
  auto layout = ShardReader::OpenBuffer(reinterpret_cast<const uint8_t*>(clean.data()), clean.size(), "clean");
  ASSERT_TRUE(layout.ok());
  const std::vector<ShardIndexEntry> index = layout.value()->index();
  const uint64_t index_offset = layout.value()->footer().index_offset;
  ASSERT_TRUE(VerifyShardBytes(reinterpret_cast<const uint8_t*>(clean.data()), clean.size()).ok());

  std::vector<uint8_t> bytes(clean.begin(), clean.end());
  int padding_bytes = 0;
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    bytes[pos] ^= 0x20;
    const Region expect = RegionOf(pos, bytes.size(), index, index_offset);
    padding_bytes += expect.where == ShardProblem::Where::kPadding;
    const ShardVerifyResult result = VerifyShardBytes(bytes.data(), bytes.size());
    ASSERT_FALSE(result.ok()) << "flip at " << pos << " went unnoticed";
    EXPECT_EQ(result.problems.size(), 1u) << "flip at " << pos;
    const ShardProblem& p = result.problems.front();
    EXPECT_EQ(p.where, expect.where) << "flip at " << pos << ": " << ShardProblemWhereName(p.where) << ": " << p.message;
    EXPECT_EQ(p.record, expect.record) << "flip at " << pos << ": " << p.message;
    if (expect.where == ShardProblem::Where::kRecord && pos >= index[expect.record].offset + kRecordHeaderSize) {
      // A header-intact record is named by its source path too.
      EXPECT_FALSE(p.source.empty()) << "flip at " << pos;
    }
    // The reader must never crash on the damaged image, verified or not.
    for (bool verify : {false, true}) {
      auto reader = ShardReader::OpenBuffer(bytes.data(), bytes.size(), "flipped", Checksums(verify));
      if (!reader.ok()) continue;
      ScratchBuffer scratch;
      bool any_failed = false;
      for (size_t i = 0; i < reader.value()->size(); ++i) {
        RecordView v;
        any_failed |= !reader.value()->Read(i, &v, &scratch).ok();
      }
      if (verify && expect.where == ShardProblem::Where::kRecord) {
        EXPECT_TRUE(any_failed) << "flip at " << pos;
      }
    }
    bytes[pos] ^= 0x20;
  }
  EXPECT_GT(padding_bytes, 0) << "the test shard should exercise padding";
}

TEST(ShardTest, TruncatedFilesAreCorruptionNeverCrash) {
  TempDir dir;
  WriteShard(dir / "t.shard", EncodeAll(MakeRecords(5, 7, 4)));
  const std::string clean = testing::ReadFile(dir / "t.shard");
  // Every prefix, in memory (exact-size heap blocks, so ASan sees any overread)...
  for (size_t len = 0; len < clean.size(); ++len) {
    std::vector<uint8_t> prefix(clean.begin(), clean.begin() + static_cast<long>(len));
    auto reader = ShardReader::OpenBuffer(prefix.data(), len, "cut");
    ASSERT_FALSE(reader.ok()) << len;
    EXPECT_EQ(reader.status().code(), Status::Code::kCorruption) << len;
    EXPECT_FALSE(VerifyShardBytes(prefix.data(), len).ok()) << len;
  }
  // ...and a few real files through mmap.
  for (size_t len : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{127}, clean.size() / 2, clean.size() - 64,
                     clean.size() - 1}) {
    const std::filesystem::path p = dir / "cut.shard";
    testing::WriteFile(p, clean.substr(0, len));
    auto reader = ShardReader::Open(p);
    ASSERT_FALSE(reader.ok()) << len;
    EXPECT_EQ(reader.status().code(), Status::Code::kCorruption) << len << ": " << reader.status().ToString();
    EXPECT_NE(reader.status().message().find("cut.shard"), std::string::npos);
    EXPECT_FALSE(VerifyShard(p).ok()) << len;
  }
}

TEST(ShardTest, MissingFileIsNotFound) {
  TempDir dir;
  EXPECT_EQ(ShardReader::Open(dir / "nope.shard").status().code(), Status::Code::kNotFound);
  EXPECT_FALSE(VerifyShard(dir / "nope.shard").ok());
}

}  // namespace
}  // namespace yc
