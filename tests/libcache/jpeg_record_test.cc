// The JPEG record codec (docs/FORMAT.md, "Record", codec 2): the round trip within a PSNR bound, the
// auto policy (raw for noise, JPEG for a photo), the checksum and validation on a JPEG record, the
// kept stream of build --update, `--compress` text, the manifest's codec.quality, and both stores.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "libcache/base/coding.h"
#include "libcache/cache.h"
#include "libcache/format/jpeg_pixels.h"
#include "libcache/format/manifest.h"
#include "libcache/verify/cache_verify.h"
#include "tests/libcache/cache_test_util.h"
#include "tests/libcache/ingest_test_util.h"
#include "tests/libcache/storage_test_util.h"

namespace yc {
namespace {

using testing::Bytes;
using testing::MakeRecord;
using testing::SynthRecord;

Codec Jpeg(int quality = kDefaultJpegQuality, Codec::Kind kind = Codec::Kind::kJpeg) {
  Codec c;
  c.kind = kind;
  c.quality = quality;
  return c;
}

// Photo-like pixels: smooth shading with edges and a little sensor noise, what JPEG is made for.
SynthRecord Photo(int h, int w, uint32_t seed) {
  std::mt19937 rng(seed);
  SynthRecord r = MakeRecord(rng, h, w, 3, "images/photo_" + std::to_string(seed) + ".jpg");
  std::normal_distribution<double> noise(0, 2);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 110 + 60 * std::sin(x / 17.0 + c) * std::cos(y / 23.0) + (x > w / 2 ? 40 : 0) + noise(rng);
        r.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return r;
}

RecordHeader Header(const std::string& enc) {
  RecordHeader h;
  EXPECT_TRUE(ParseRecordHeader(Bytes(enc), enc.size(), &h).ok());
  return h;
}

TEST(JpegRecordTest, RoundTripDecodesIntoScratchWithinAPsnrBound) {
  const SynthRecord r = Photo(120, 160, 1);
  const std::string enc = r.Encode(Jpeg());
  const RecordHeader h = Header(enc);
  ASSERT_EQ(h.codec, Codec::Kind::kJpeg);
  EXPECT_LT(h.stored_pixel_bytes * 4, h.raw_pixel_bytes);  // a photo shrinks several times
  EXPECT_EQ(enc, r.Encode(Jpeg())) << "the encoder is deterministic (build --update relies on it)";

  RecordView v;
  ScratchBuffer scratch;
  const Status s = DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(v.height, 120);
  ASSERT_EQ(v.width, 160);
  EXPECT_EQ(v.source, r.source);
  ASSERT_EQ(v.box_count, r.boxes.size());
  EXPECT_EQ(std::memcmp(v.boxes, r.boxes.data(), r.boxes.size() * sizeof(Box)), 0);  // labels stay exact
  EXPECT_GE(v.pixels, scratch.data());
  EXPECT_LT(v.pixels, scratch.data() + scratch.size());
  EXPECT_EQ(v.jpeg, Bytes(enc) + h.pixel_offset);
  EXPECT_EQ(v.jpeg_bytes, h.stored_pixel_bytes);
  const double psnr = PixelPsnr(r.pixels.data(), v.pixels, r.pixels.size());
  EXPECT_GT(psnr, 36.0);
  // Quality orders both size and fidelity.
  const std::string low = r.Encode(Jpeg(50));
  RecordView lv;
  ASSERT_TRUE(DecodeRecord(Bytes(low), low.size(), true, &lv, &scratch).ok());
  EXPECT_LT(low.size(), enc.size());
  EXPECT_LT(PixelPsnr(r.pixels.data(), lv.pixels, r.pixels.size()), psnr);
}

TEST(JpegRecordTest, AutoStoresNoiseRawAndAPhotoAsJpeg) {
  std::mt19937 rng(2);
  const SynthRecord noise = MakeRecord(rng, 96, 128, 2, "noise.png");
  // Size alone would not tell: JPEG "shrinks" noise to about a third by discarding it.
  const RecordHeader forced = Header(noise.Encode(Jpeg()));
  EXPECT_EQ(forced.codec, Codec::Kind::kJpeg);
  EXPECT_LT(forced.stored_pixel_bytes * 2, forced.raw_pixel_bytes);

  const std::string enc = noise.Encode(Jpeg(kDefaultJpegQuality, Codec::Kind::kAuto));
  EXPECT_EQ(Header(enc).codec, Codec::Kind::kNone);
  RecordView v;
  ScratchBuffer scratch;
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch).ok());
  testing::ExpectViewMatches(v, noise);  // exact
  EXPECT_EQ(v.jpeg, nullptr);

  const SynthRecord photo = Photo(96, 128, 3);
  EXPECT_EQ(Header(photo.Encode(Jpeg(kDefaultJpegQuality, Codec::Kind::kAuto))).codec, Codec::Kind::kJpeg);
  // A tiny image's JPEG (its tables alone are ~600 bytes) does not shrink it: raw under jpeg too.
  const SynthRecord tiny = Photo(6, 7, 4);
  EXPECT_EQ(Header(tiny.Encode(Jpeg())).codec, Codec::Kind::kNone);
}

TEST(JpegRecordTest, ChecksumAndValidationRefuseADamagedStream) {
  const SynthRecord r = Photo(64, 80, 5);
  const std::string enc = r.Encode(Jpeg());
  const RecordHeader h = Header(enc);
  ASSERT_EQ(h.codec, Codec::Kind::kJpeg);
  RecordView v;
  ScratchBuffer scratch;
  for (uint64_t at : {uint64_t{h.pixel_offset} + 1, uint64_t{h.pixel_offset} + h.stored_pixel_bytes / 2,
                      uint64_t{enc.size()} - 1}) {
    std::string bad = enc;
    bad[at] ^= 0x01;
    const Status s = DecodeRecord(Bytes(bad), bad.size(), true, &v, &scratch);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << at;
    EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();
  }
  // With a recomputed checksum, validation still refuses what the stream header gets wrong.
  const auto forged = [&](const std::string& pixels, uint32_t height, uint32_t width) {
    std::string rec = enc.substr(0, h.pixel_offset) + pixels;
    uint8_t* p = reinterpret_cast<uint8_t*>(rec.data());
    EncodeFixed32(p + 8, height);
    EncodeFixed32(p + 12, width);
    EncodeFixed64(p + 32, uint64_t{height} * width * 3);
    EncodeFixed64(p + 40, pixels.size());
    EncodeFixed64(p + kRecordChecksumOffset, ComputeRecordChecksum(p, rec.size()));
    return DecodeRecord(p, rec.size(), true, &v, &scratch);
  };
  const std::string stream = enc.substr(h.pixel_offset);
  EXPECT_TRUE(forged(stream, 64, 80).ok());  // the forgery itself is sound
  Status s = forged(stream, 8000, 8000);     // a header claiming 192 MB for a small stream
  EXPECT_NE(s.message().find("jpeg: stream is 64x80, the header 8000x8000"), std::string::npos) << s.ToString();
  s = forged(std::string(stream.size(), 'x'), 64, 80);
  EXPECT_NE(s.message().find("not a JPEG stream"), std::string::npos) << s.ToString();
  s = forged(stream.substr(0, stream.size() / 2), 64, 80);  // truncated: libjpeg would pad with grey
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
}

TEST(JpegRecordTest, AKeptStreamIsStoredAsIsAndMustMatchTheImage) {
  const SynthRecord r = Photo(48, 64, 6);
  const std::string enc = r.Encode(Jpeg(80));
  RecordView v;
  ScratchBuffer scratch;
  ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &v, &scratch).ok());
  // What build --update does for an unchanged image: decoded pixels, the old stream, whatever codec.
  RecordInput in = r.input();
  in.pixels = v.pixels;
  in.jpeg = v.jpeg;
  in.jpeg_bytes = v.jpeg_bytes;
  std::string again;
  ASSERT_TRUE(EncodeRecord(in, Codec{}, &again).ok());
  EXPECT_EQ(again, enc);
  in.h = 47;  // a stream that is not of this image's size
  const Status s = EncodeRecord(in, Codec{}, &again);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
}

TEST(JpegRecordTest, CompressTextParsesAndPrintsBack) {
  Codec c;
  ASSERT_TRUE(ParseCodecSpec("jpeg", &c).ok());
  EXPECT_EQ(c.kind, Codec::Kind::kJpeg);
  EXPECT_EQ(c.quality, kDefaultJpegQuality);
  ASSERT_TRUE(ParseCodecSpec("auto:75", &c).ok());
  EXPECT_EQ(c.kind, Codec::Kind::kAuto);
  EXPECT_EQ(c.quality, 75);
  ASSERT_TRUE(ParseCodecSpec("zstd:-7", &c).ok());
  EXPECT_EQ(c.level, -7);
  for (const char* text : {"none", "zstd:3", "jpeg:90", "auto:1", "jpeg:100"}) {
    ASSERT_TRUE(ParseCodecSpec(text, &c).ok()) << text;
    EXPECT_EQ(CodecSpec(c), text);
  }
  for (const char* bad : {"jpeg:0", "jpeg:101", "jpeg:9x", "jpeg:", "auto:-1", "none:3", "zstd:23", "zstd:-8", "webp", ""})
    EXPECT_EQ(ParseCodecSpec(bad, &c).code(), Status::Code::kInvalidArgument) << bad;
  EXPECT_NE(ParseCodecSpec("jpeg:101", &c).message().find("JPEG quality must be 1..100"), std::string::npos);
}

TEST(JpegRecordTest, ManifestKeepsTheQualityAndFormat3CannotNameJpeg) {
  testing::TempDir dir;
  WriterOptions options;
  options.codec = Jpeg(77, Codec::Kind::kAuto);
  testing::BuildTestCache(dir.path(), options, {{"train", 3}});
  Result<Manifest> m = ReadManifest(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->format_version, 4);
  EXPECT_EQ(CodecSpec(m->codec), "auto:77");

  // A format-3 manifest (what the previous release wrote) still reads; one naming jpeg does not.
  Manifest old = *m;
  old.format_version = 3;
  old.codec = Codec{Codec::Kind::kZstd, 5};
  ASSERT_TRUE(WriteManifest(dir.path(), old).ok());
  m = ReadManifest(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->format_version, 3);
  old.codec = Jpeg();
  ASSERT_TRUE(WriteManifest(dir.path(), old).ok());
  m = ReadManifest(dir.path());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("codec.name: jpeg needs manifest format 4"), std::string::npos) << m.status().ToString();
}

// Both stores hand out exactly the pixels the record's stream decodes to, verify passes, and a flipped
// byte in a JPEG record is named by verify (LMDB: the value's own checksum, after the file's).
TEST(JpegRecordTest, ShardsAndLmdbServeAndVerifyJpegRecords) {
  for (Backend backend : {Backend::kShards, Backend::kLmdb}) {
    SCOPED_TRACE(BackendName(backend));
    testing::TempDir dir;
    WriterOptions options;
    options.backend = backend;
    options.codec = Jpeg();
    const testing::TestCache built = testing::BuildTestCache(dir.path(), options, {{"train", 12}}, 64, /*smooth=*/true);
    Result<std::unique_ptr<Cache>> cache = Cache::Open(dir.path(), OpenOptions{true});
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    const RecordSource* train = cache.value()->split("train");
    ScratchBuffer scratch, expected_scratch;
    int jpeg = 0;
    for (size_t i = 0; i < train->size(); ++i) {
      RecordView v, expected;
      ASSERT_TRUE(train->Read(i, &v, &scratch).ok());
      const std::string enc = built.records.at("train")[i].Encode(options.codec);
      ASSERT_TRUE(DecodeRecord(Bytes(enc), enc.size(), true, &expected, &expected_scratch).ok());
      ASSERT_EQ(v.height * v.width, expected.height * expected.width);
      EXPECT_EQ(std::memcmp(v.pixels, expected.pixels, static_cast<size_t>(v.height) * v.width * 3), 0) << i;
      jpeg += v.jpeg != nullptr;
    }
    EXPECT_GT(jpeg, 3);
    EXPECT_TRUE(VerifyCache(dir.path()).ok());
    cache.value().reset();

    const std::filesystem::path file = dir / (backend == Backend::kShards ? "train-00000.shard" : "train.lmdb");
    std::string bytes = testing::ReadFile(file);
    const std::string record = built.records.at("train")[5].Encode(options.codec);
    const size_t at = bytes.find(record);
    ASSERT_NE(at, std::string::npos);
    bytes[at + record.size() - 3] ^= 0x20;  // inside the stream's last bytes
    testing::WriteFile(file, bytes);
    const VerifyReport report = VerifyCache(dir.path());
    bool named = false;
    for (const VerifyProblem& p : report.problems) named = named || p.record == 5;
    EXPECT_TRUE(named) << (report.problems.empty() ? "no problem" : report.problems.front().ToString());
  }
}

}  // namespace
}  // namespace yc
