// StagedWindow (loader/io/staged_window.h): records served from a copy of their stored bytes decode as
// from the cache; a compressed record is decompressed once and kept (its later reads come from the
// arena, equal to the source's), within the arena's size; damage in the copy is reported, never kept.
#include "loader/io/staged_window.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "libcache/cache.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {

using testing::BuildTestCache;
using testing::TempDir;

struct Staged {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::unique_ptr<Cache> cache;
  const RecordSource* train = nullptr;
  std::unique_ptr<StagedWindow> window;
  std::vector<uint64_t> offsets, lengths;  // of each record's copy in the window's buffer
};

// Every train record's stored bytes, read from its data file into one staged window.
Staged Stage(Backend backend, Codec codec, uint64_t arena_bytes) {
  Staged s;
  WriterOptions w;
  w.backend = backend;
  w.codec = codec;
  w.shard_size = 64 * 1024;
  BuildTestCache(s.dir->path(), w, {{"train", 12}}, 48, /*smooth=*/true);  // smooth pixels compress
  auto opened = Cache::Open(s.dir->path());
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  s.cache = std::move(opened.value());
  s.train = s.cache->split("train");
  s.window = std::make_unique<StagedWindow>(s.train);
  uint64_t total = 0;
  for (size_t i = 0; i < s.train->size(); ++i) {
    RecordExtent e;
    EXPECT_TRUE(s.train->Extent(i, &e));
    s.offsets.push_back(total);
    s.lengths.push_back(e.length);
    total += (e.length + 63) / 64 * 64;  // 64-byte aligned copies, as the shard lays them out
  }
  uint8_t* buffer = s.window->Reserve(total, 0);
  EXPECT_NE(buffer, nullptr);
  for (size_t i = 0; i < s.train->size(); ++i) {
    RecordExtent e;
    EXPECT_TRUE(s.train->Extent(i, &e));
    FILE* f = std::fopen(s.train->DataFilePath(e.file).c_str(), "rb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(std::fseek(f, static_cast<long>(e.offset), SEEK_SET), 0);
    EXPECT_EQ(std::fread(buffer + s.offsets[i], 1, e.length, f), e.length);
    std::fclose(f);
    s.window->Add(i, s.offsets[i], e.length);
  }
  s.window->Seal(arena_bytes);
  return s;
}

void ExpectSameRecord(const RecordView& a, const RecordView& b) {
  ASSERT_EQ(a.height, b.height);
  ASSERT_EQ(a.width, b.width);
  EXPECT_EQ(std::memcmp(a.pixels, b.pixels, size_t(a.height) * a.width * 3), 0);
  ASSERT_EQ(a.box_count, b.box_count);
  for (size_t k = 0; k < a.box_count; ++k) {
    EXPECT_EQ(a.boxes[k].cls, b.boxes[k].cls);
    EXPECT_EQ(a.boxes[k].cx, b.boxes[k].cx);
    EXPECT_EQ(a.boxes[k].w, b.boxes[k].w);
  }
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.index, b.index);
}

bool Inside(const void* p, const ScratchBuffer& scratch) {
  const auto* q = static_cast<const uint8_t*>(p);
  return q >= scratch.data() && q < scratch.data() + scratch.size();
}

// Record i read from the cache, then twice from the window: both window reads equal the cache's.
// Each read has its own scratch, so where its pixels lie tells whether it decompressed.
struct ThreeReads {
  ScratchBuffer cache_scratch, first_scratch, second_scratch;
  RecordView cache, first, second;
  bool first_decompressed() const { return Inside(first.pixels, first_scratch); }
  bool second_decompressed() const { return Inside(second.pixels, second_scratch); }
};
void ReadThrice(const Staged& s, size_t i, ThreeReads* r) {
  ASSERT_TRUE(s.train->Read(i, &r->cache, &r->cache_scratch).ok());
  ASSERT_TRUE(s.window->Read(i, &r->first, &r->first_scratch).ok());
  ASSERT_TRUE(s.window->Read(i, &r->second, &r->second_scratch).ok());
  ExpectSameRecord(r->first, r->cache);
  ExpectSameRecord(r->second, r->cache);
}

// Compressed records (zstd and jpeg; shards and LMDB, whose unaligned values have their boxes copied):
// the first read decodes into the reader's scratch, every later one is served from the arena, and all equal
// the cache's own read. Raw records are served in place.
TEST(StagedWindowTest, CompressedRecordsAreDecompressedOnceAndEqualTheCache) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    for (Codec codec : {Codec{}, Codec{Codec::Kind::kZstd, 1}, Codec{Codec::Kind::kJpeg}}) {
      SCOPED_TRACE(std::string(BackendName(backend)) + " " + CodecKindName(codec.kind));
      Staged s = Stage(backend, codec, uint64_t{1} << 30);
      size_t kept = 0;
      for (size_t i = 0; i < s.train->size(); ++i) {
        ThreeReads r;
        ReadThrice(s, i, &r);
        EXPECT_FALSE(r.second_decompressed()) << i;
        if (r.first_decompressed()) ++kept;  // compressed: the first read decompressed and kept it
      }
      if (codec.kind != Codec::Kind::kNone) {  // JPEG records: decoded once per window as well
        EXPECT_GT(kept, s.train->size() / 2);
      } else {
        EXPECT_EQ(kept, 0u);
      }
      // A record outside the window comes from the cache.
      StagedWindow empty(s.train);
      RecordView v;
      ScratchBuffer scratch;
      ASSERT_TRUE(empty.Read(3, &v, &scratch).ok());
      EXPECT_EQ(v.index, 3u);
    }
  }
}

// An arena smaller than the window keeps what fits; the other records are decompressed on each read,
// still correct.
TEST(StagedWindowTest, RecordsPastTheArenaAreDecompressedOnEveryRead) {
  Staged s = Stage(Backend::kShards, Codec{Codec::Kind::kZstd, 1}, 48 * 48 * 3 + 64);  // about one record
  size_t from_arena = 0;
  for (size_t i = 0; i < s.train->size(); ++i) {
    ThreeReads r;
    ReadThrice(s, i, &r);
    EXPECT_TRUE(r.first_decompressed()) << i;
    if (!r.second_decompressed()) ++from_arena;
  }
  EXPECT_GE(from_arena, 1u);
  EXPECT_LT(from_arena, s.train->size());
}

// A damaged byte in the staged copy fails as Corruption naming the record, on every read: a failed
// decode is never kept.
TEST(StagedWindowTest, DamageInTheCopyIsReportedAndNeverKept) {
  for (Codec codec : {Codec{}, Codec{Codec::Kind::kZstd, 1}, Codec{Codec::Kind::kJpeg}}) {
    Staged s = Stage(Backend::kShards, codec, uint64_t{1} << 30);
    // Record 5's copy with its last byte (pixels) flipped, read before the cache ever read it: the
    // first-read checksum fails.
    RecordView v;
    ScratchBuffer scratch;
    StagedWindow damaged(s.train);
    uint8_t* buffer = damaged.Reserve(s.lengths[5], 0);
    ASSERT_NE(buffer, nullptr);
    RecordExtent e;
    ASSERT_TRUE(s.train->Extent(5, &e));
    FILE* f = std::fopen(s.train->DataFilePath(e.file).c_str(), "rb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fseek(f, static_cast<long>(e.offset), SEEK_SET), 0);
    ASSERT_EQ(std::fread(buffer, 1, e.length, f), e.length);
    std::fclose(f);
    buffer[e.length - 1] ^= 0x40;
    damaged.Add(5, 0, e.length);
    damaged.Seal(uint64_t{1} << 30);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const Status st = damaged.Read(5, &v, &scratch);
      ASSERT_FALSE(st.ok()) << attempt;
      EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
      EXPECT_NE(st.message().find("record 5"), std::string::npos) << st.ToString();
    }
  }
}

}  // namespace
}  // namespace yc
