#include "libcache/format/record_format.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include "libcache/base/coding.h"
#include "libcache/cache.h"
#include "libcache/source/labels.h"
#include "libcache/verify/cache_verify.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/libcache/forge_test_util.h"
#include "tests/libcache/ingest_test_util.h"
#include "tests/libcache/storage_test_util.h"

namespace yc {
namespace {

using testing::Bytes;
using testing::MakeRecord;
using testing::SynthRecord;

TEST(RecordTest, RawRoundTripIsZeroCopyAndAligned) {
  std::mt19937 rng(1);
  const SynthRecord r = MakeRecord(rng, 37, 53, 7, "images/train/a b/ünïcode.jpg");
  const std::string enc = r.Encode();
  RecordHeader h;
  ASSERT_TRUE(ParseRecordHeader(Bytes(enc), enc.size(), &h).ok());
  EXPECT_EQ(h.codec, Codec::Kind::kNone);
  EXPECT_EQ(h.pixel_offset % 64, 0u);
  EXPECT_EQ(h.record_size(), enc.size());

  RecordView v;
  ScratchBuffer scratch;
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch).ok());
  testing::ExpectViewMatches(v, r);
  // Zero copy: pixels and boxes point into the record itself; scratch untouched.
  EXPECT_EQ(v.pixels, Bytes(enc) + h.pixel_offset);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(v.boxes), Bytes(enc) + kRecordHeaderSize);
  EXPECT_TRUE(scratch.empty());
}

TEST(RecordTest, ChecksumIsXxh3OfRecordWithFieldZeroed) {
  std::mt19937 rng(2);
  const std::string enc = MakeRecord(rng, 8, 9, 2, "x.jpg").Encode();
  std::string copy = enc;
  std::memset(copy.data() + kRecordChecksumOffset, 0, 8);
  EXPECT_EQ(DecodeFixed64(Bytes(enc) + kRecordChecksumOffset), XXH3_64bits(copy.data(), copy.size()));
  EXPECT_EQ(ComputeRecordChecksum(Bytes(enc), enc.size()), XXH3_64bits(copy.data(), copy.size()));
}

TEST(RecordTest, ZstdRoundTripDecompressesIntoScratch) {
  std::mt19937 rng(3);
  const SynthRecord r = MakeRecord(rng, 120, 160, 3, "smooth.png", /*smooth=*/true);
  const std::string enc = r.Encode(Codec{Codec::Kind::kZstd, 3});
  RecordHeader h;
  ASSERT_TRUE(ParseRecordHeader(Bytes(enc), enc.size(), &h).ok());
  ASSERT_EQ(h.codec, Codec::Kind::kZstd);
  EXPECT_LT(h.stored_pixel_bytes, h.raw_pixel_bytes / 2);

  ScratchBuffer scratch;
  RecordView v;
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch).ok());
  testing::ExpectViewMatches(v, r);
  EXPECT_GE(v.pixels, scratch.data());
  EXPECT_LT(v.pixels, scratch.data() + scratch.size());
  // Warm scratch is reused, not reallocated.
  const uint8_t* before = scratch.data();
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), false, &v, &scratch).ok());
  EXPECT_EQ(scratch.data(), before);
  testing::ExpectViewMatches(v, r);
}

TEST(RecordTest, IncompressiblePixelsAreStoredRaw) {
  std::mt19937 rng(4);
  const SynthRecord r = MakeRecord(rng, 64, 64, 1, "noise.jpg", /*smooth=*/false);
  const std::string enc = r.Encode(Codec{Codec::Kind::kZstd, 1});
  RecordHeader h;
  ASSERT_TRUE(ParseRecordHeader(Bytes(enc), enc.size(), &h).ok());
  EXPECT_EQ(h.codec, Codec::Kind::kNone);
  RecordView v;
  ScratchBuffer scratch;
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch).ok());
  testing::ExpectViewMatches(v, r);
}

TEST(RecordTest, BackgroundRecordHasNoBoxes) {
  std::mt19937 rng(5);
  const SynthRecord r = MakeRecord(rng, 5, 5, 0, "");
  const std::string enc = r.Encode();
  RecordView v;
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &v, nullptr).ok());
  EXPECT_EQ(v.box_count, 0u);
  EXPECT_EQ(v.boxes, nullptr);
  EXPECT_TRUE(v.source.empty());
}

TEST(RecordTest, UnalignedRecordGetsAlignedBoxCopy) {
  std::mt19937 rng(6);
  const SynthRecord r = MakeRecord(rng, 6, 7, 5, "odd.jpg");
  const std::string enc = r.Encode();
  for (size_t shift = 1; shift < 4; ++shift) {
    std::vector<uint8_t> buf(enc.size() + 8);
    uint8_t* at = buf.data() + shift;
    if (reinterpret_cast<uintptr_t>(at) % alignof(Box) == 0) continue;
    std::memcpy(at, enc.data(), enc.size());
    RecordView v;
    ScratchBuffer scratch;
    ASSERT_TRUE(DecodeRecord(at, enc.size(), true, &v, &scratch).ok());
    testing::ExpectViewMatches(v, r);  // checks alignment of v.boxes
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(v.boxes), scratch.data());
    EXPECT_EQ(v.pixels, at + (enc.size() - r.pixels.size()));  // pixels still zero copy
  }
}

TEST(RecordTest, EveryByteFlipFailsVerificationAndNeverCrashes) {
  std::mt19937 rng(7);
  for (Codec::Kind kind : {Codec::Kind::kNone, Codec::Kind::kZstd}) {
    const SynthRecord r = MakeRecord(rng, 12, 16, 3, "flip.jpg", /*smooth=*/true);
    const std::string enc = r.Encode(Codec{kind, 3});
    std::string bad = enc;
    ScratchBuffer scratch;
    for (size_t pos = 0; pos < enc.size(); ++pos) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        bad[pos] = static_cast<char>(enc[pos] ^ mask);
        RecordView v;
        const Status checked = DecodeRecord(Bytes(bad), bad.size(), true, &v, &scratch);
        EXPECT_EQ(checked.code(), Status::Code::kCorruption) << "byte " << pos;
        // Unverified decoding must stay in bounds whatever it concludes.
        const Status unchecked = DecodeRecord(Bytes(bad), bad.size(), false, &v, &scratch);
        if (unchecked.ok()) {
          EXPECT_TRUE(v.pixels != nullptr);
        }
        bad[pos] = enc[pos];
      }
    }
  }
}

TEST(RecordTest, EveryTruncationIsCorruption) {
  std::mt19937 rng(8);
  for (Codec::Kind kind : {Codec::Kind::kNone, Codec::Kind::kZstd}) {
    const std::string enc = MakeRecord(rng, 10, 10, 2, "t.jpg", true).Encode(Codec{kind, 3});
    ScratchBuffer scratch;
    for (size_t len = 0; len < enc.size(); ++len) {
      std::vector<uint8_t> prefix(enc.begin(), enc.begin() + static_cast<long>(len));  // exact-size heap block
      RecordView v;
      EXPECT_EQ(DecodeRecord(prefix.data(), len, false, &v, &scratch).code(), Status::Code::kCorruption) << len;
    }
  }
}

TEST(RecordTest, HostileHeaderFieldsAreRejectedBeforeUse) {
  std::mt19937 rng(9);
  const std::string enc = MakeRecord(rng, 4, 4, 1, "h.jpg").Encode();
  auto patched = [&](size_t off, uint64_t value, size_t width) {
    std::string s = enc;
    std::memcpy(s.data() + off, &value, width);
    return s;
  };
  const std::pair<size_t, size_t> fields[] = {{8, 4}, {12, 4}, {24, 4}, {28, 4}, {32, 8}, {40, 8}, {56, 4}};
  for (const auto& [off, width] : fields) {
    for (uint64_t value : {uint64_t{0}, uint64_t{0xffffffff}, ~uint64_t{0}, uint64_t{1} << 31}) {
      const std::string bad = patched(off, value, width);
      RecordView v;
      ScratchBuffer scratch;
      // Structurally impossible values are refused before use; a value that happens to describe a
      // consistent record (a shorter source path, say) is only caught by the checksum.
      const Status unchecked = DecodeRecord(Bytes(bad), bad.size(), false, &v, &scratch);
      EXPECT_TRUE(unchecked.ok() || unchecked.code() == Status::Code::kCorruption) << unchecked.ToString();
      EXPECT_LT(scratch.size(), size_t{1} << 20) << "a hostile header must not make the reader allocate";
      EXPECT_EQ(DecodeRecord(Bytes(bad), bad.size(), true, &v, &scratch).code(), Status::Code::kCorruption)
          << "field at " << off << " = " << value;
    }
  }
}

TEST(RecordTest, EncodeRejectsInvalidInput) {
  std::mt19937 rng(10);
  const SynthRecord r = MakeRecord(rng, 4, 4, 1, "ok.jpg");
  std::string out;
  RecordInput in = r.input();
  in.h = 0;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
  for (int c : {1, 2, 4, 5}) {  // version-1 records are RGB
    in = r.input();
    in.c = c;
    EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument) << c;
  }
  in = r.input();
  in.pixels = nullptr;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
  in = r.input();
  in.boxes = nullptr;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
  in = r.input();
  in.w = 70000;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
  in = r.input();
  std::string long_path(5000, 'a');
  in.source = long_path;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
}

TEST(RecordTest, OutputBufferIsReusedAcrossRecords) {
  std::mt19937 rng(11);
  const SynthRecord big = MakeRecord(rng, 64, 64, 2, "big.jpg");
  const SynthRecord small = MakeRecord(rng, 3, 3, 1, "small.jpg");
  std::string out;
  ASSERT_TRUE(EncodeRecord(big.input(), {}, &out).ok());
  ASSERT_TRUE(EncodeRecord(small.input(), {}, &out).ok());
  RecordView v;
  ASSERT_TRUE(DecodeRecord(Bytes(out), out.size(), true, &v, nullptr).ok());
  testing::ExpectViewMatches(v, small);
}

TEST(RecordTest, EncoderRefusesBoxesAReaderWouldRefuse) {
  std::mt19937 rng(12);
  const SynthRecord r = MakeRecord(rng, 4, 4, 1, "ok.jpg");
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Box bad[] = {{-1, 0.5f, 0.5f, 0.1f, 0.1f}, {std::numeric_limits<int32_t>::min(), 0.5f, 0.5f, 0.1f, 0.1f},
                     {0, nan, 0.5f, 0.1f, 0.1f},   {0, 0.5f, 0.5f, inf, 0.1f},
                     {0, 1.5f, 0.5f, 0.1f, 0.1f},  {0, 0.5f, 0.5f, 0.0f, 0.1f},
                     {0, 0.5f, 0.5f, 0.1f, -0.1f}, {0, 0.5f, -0.02f, 0.1f, 0.1f}};
  for (const Box& b : bad) {
    RecordInput in = r.input();
    in.boxes = &b;
    in.n = 1;
    std::string out;
    const Status s = EncodeRecord(in, {}, &out);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << b.cls << " " << b.cx << " " << b.w << ": " << s.ToString();
  }
  RecordInput in = r.input();
  const std::string nul("a\0b", 3);
  in.source = nul;
  std::string out;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
}

// Label values at the edges of what labels.cc accepts (it does not clip) must survive the round trip:
// the record rules may not refuse a box that the builder writes.
TEST(RecordTest, BoxesAtTheEdgesOfWhatTheBuilderWritesAreAccepted) {
  std::mt19937 rng(13);
  const SynthRecord r = MakeRecord(rng, 6, 6, 0, "edge.jpg");
  for (const char* text : {"0 1.01 1.01 1.01 1.01\n1 -0.01 -0.01 0.0001 0.0001\n2 0 1 1 0.5\n",
                           "2 -0.01 -0.01 1.01 -0.01 1.01 1.01 -0.01 1.01\n"}) {
    const ParsedLabels labels = ParseLabels(text, 3);
    ASSERT_FALSE(labels.has_error()) << text;
    ASSERT_FALSE(labels.boxes.empty()) << text;
    RecordInput in = r.input();
    in.boxes = labels.boxes.data();
    in.n = labels.boxes.size();
    std::string enc;
    ASSERT_TRUE(EncodeRecord(in, {}, &enc).ok()) << text;
    RecordView v;
    ScratchBuffer scratch;
    const Status s = DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch, RecordLimits{3, 6});
    ASSERT_TRUE(s.ok()) << text << ": " << s.ToString();
    ASSERT_EQ(v.box_count, labels.boxes.size());
    EXPECT_EQ(std::memcmp(v.boxes, labels.boxes.data(), v.box_count * sizeof(Box)), 0);
  }
}

TEST(RecordTest, ZstdFrameHelperMakesWellFormedFrames) {
  // The zstd forgery must be a real frame, or the test below would prove nothing.
  const std::string small = testing::ZstdFrameOfZeros(300000);
  std::vector<uint8_t> out(300000, 1);
  EXPECT_EQ(ZSTD_decompress(out.data(), out.size(), small.data(), small.size()), 300000u);
  EXPECT_EQ(std::count(out.begin(), out.end(), 0), 300000);
  const std::string huge = testing::ZstdFrameOfZeros(uint64_t{1} << 32);
  EXPECT_LT(huge.size(), 140u * 1024);
  EXPECT_EQ(ZSTD_getFrameContentSize(huge.data(), huge.size()), uint64_t{1} << 32);
  EXPECT_EQ(ZSTD_findFrameCompressedSize(huge.data(), huge.size()), huge.size());
}

// Each forgery keeps a valid record checksum: only the value checks can stop it, with or without
// hashing, whatever the alignment, and before any large allocation.
TEST(RecordTest, ForgedRecordsWithValidChecksumsAreRefused) {
  std::mt19937 rng(14);
  const std::string clean = MakeRecord(rng, 20, 30, 3, "forged.jpg").Encode();
  const RecordLimits limits{80, 64};
  for (testing::Forgery f : testing::AllForgeries()) {
    testing::RecordParts parts = testing::PartsOf(clean);
    const std::string expected = testing::Forge(f, limits, &parts);
    const std::string rec = parts.Encode();
    for (size_t shift : {size_t{0}, size_t{1}}) {  // 1: an LMDB value with no alignment guarantee
      std::vector<uint8_t> buf(rec.size() + shift);
      std::memcpy(buf.data() + shift, rec.data(), rec.size());
      for (bool verify : {true, false}) {
        RecordView v;
        ScratchBuffer scratch;
        const Status s = DecodeRecord(buf.data() + shift, rec.size(), verify, &v, &scratch, limits);
        EXPECT_EQ(s.code(), Status::Code::kCorruption) << testing::ForgeryName(f) << ": " << s.ToString();
        EXPECT_NE(s.message().find(expected), std::string::npos) << testing::ForgeryName(f) << ": " << s.message();
        EXPECT_LT(scratch.size(), size_t{1} << 16) << testing::ForgeryName(f) << ": allocated before refusing";
      }
    }
  }
}

// A zstd frame consistent with a header that claims 4 GiB (65535 x 21845 x 3): legal for the format
// alone, but larger than any cache's imgsz, so a reader that knows the manifest never allocates it.
TEST(RecordTest, HugeConsistentZstdRecordIsRefusedByTheImgszLimit) {
  testing::RecordParts parts;
  parts.codec = 1;
  parts.height = 65535;
  parts.width = 21845;
  parts.orig_height = parts.orig_width = 100;
  parts.pixels = testing::ZstdFrameOfZeros(uint64_t{65535} * 21845 * 3);
  const std::string rec = parts.Encode();
  RecordHeader h;
  ASSERT_TRUE(ParseRecordHeader(Bytes(rec), rec.size(), &h).ok());
  RecordView v;
  ScratchBuffer scratch;
  const Status s = DecodeRecord(Bytes(rec), rec.size(), true, &v, &scratch, RecordLimits{80, 640});
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("exceeds the cache's imgsz 640"), std::string::npos) << s.message();
  EXPECT_TRUE(scratch.empty());
}

// One record of a built cache replaced by each forgery and the cache re-sealed (record, index,
// shard and manifest checksums): verify names split, record and file; Cache readers refuse that
// record and only that one.
TEST(RecordTest, ForgedRecordInAResealedCacheIsCaughtByVerifyAndReaders) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    testing::TempDir clean_dir;
    WriterOptions options;
    options.backend = backend;
    const testing::TestCache built = testing::BuildTestCache(clean_dir.path(), options, {{"train", 6}}, 24);
    const RecordLimits limits = ManifestRecordLimits(built.manifest);
    ASSERT_EQ(limits.class_count, 80u);
    ASSERT_EQ(limits.max_side, 24u);
    constexpr size_t kForged = 3;
    const std::string clean = testing::ReadStoredRecord(clean_dir.path(), "train", kForged);
    ASSERT_FALSE(clean.empty());
    for (testing::Forgery f : testing::AllForgeries()) {
      if (backend == Backend::kLmdb && !testing::HeaderParses(f)) continue;  // the LMDB writer refuses those
      if (f == testing::Forgery::kHuge1Channel) continue;  // 16 MB; the other channel forgeries cover it here
      SCOPED_TRACE(std::string(BackendName(backend)) + " " + testing::ForgeryName(f));
      testing::TempDir tmp;
      const std::filesystem::path dir = tmp / "cache";
      std::filesystem::copy(clean_dir.path(), dir, std::filesystem::copy_options::recursive);
      testing::RecordParts parts = testing::PartsOf(clean);
      const std::string expected = testing::Forge(f, limits, &parts);
      const std::filesystem::path file = backend == Backend::kLmdb
                                             ? testing::ReplaceLmdbRecord(dir, "train", kForged, parts.Encode())
                                             : testing::ReplaceShardRecord(dir, "train", kForged, parts.Encode());

      const VerifyReport report = VerifyCache(dir);
      ASSERT_EQ(report.problems.size(), 1u);
      const VerifyProblem& p = report.problems[0];
      EXPECT_EQ(p.split, "train");
      EXPECT_EQ(p.record, static_cast<int64_t>(kForged));
      EXPECT_EQ(p.file, file.string());
      EXPECT_NE(p.message.find(expected), std::string::npos) << p.ToString();
      // The source path is found through the header, so only when the header itself parses.
      if (testing::HeaderParses(f)) {
        EXPECT_EQ(p.source, built.records.at("train")[kForged].source);
      }

      for (bool hash : {false, true}) {
        OpenOptions oo;
        oo.verify_checksums = hash;
        auto cache = Cache::Open(dir, oo);
        ASSERT_TRUE(cache.ok()) << cache.status().ToString();
        const RecordSource* src = cache.value()->split("train");
        ScratchBuffer scratch;
        RecordView v;
        const Status s = src->Read(kForged, &v, &scratch);
        EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
        EXPECT_NE(s.message().find(file.string() + ": record " + std::to_string(kForged)), std::string::npos) << s.message();
        EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
        EXPECT_LT(scratch.size(), size_t{1} << 16);
        for (size_t i = 0; i < src->size(); ++i)
          if (i != kForged) {
            EXPECT_TRUE(src->Read(i, &v, &scratch).ok()) << i;
          }
      }
    }
  }
}

}  // namespace
}  // namespace yc
