#include "libcache/record_format.h"

#include <cstring>
#include <random>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "libcache/coding.h"
#include "tests/libcache/storage_test_util.h"

namespace yc {
namespace {

using testing::MakeRecord;
using testing::SynthRecord;

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

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
  in = r.input();
  in.c = 5;
  EXPECT_EQ(EncodeRecord(in, {}, &out).code(), Status::Code::kInvalidArgument);
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

}  // namespace
}  // namespace yc
