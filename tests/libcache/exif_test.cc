#include "libcache/source/exif.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "libcache/source/decode.h"
#include "tests/libcache/ingest_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {
using testing::Bytes;

int Orientation(const std::string& bytes) { return JpegExifOrientation(Bytes(bytes), bytes.size()); }

class ExifSynthetic : public ::testing::Test {
 protected:
  void SetUp() override { plain_ = testing::MakeJpeg(testing::Blocks(48, 24)); }
  std::string plain_;
};

TEST_F(ExifSynthetic, AllEightOrientationsBothByteOrders) {
  EXPECT_EQ(Orientation(plain_), 1);
  for (int o = 1; o <= 8; ++o) {
    EXPECT_EQ(Orientation(testing::WithOrientation(plain_, o, false)), o) << "big endian " << o;
    EXPECT_EQ(Orientation(testing::WithOrientation(plain_, o, true)), o) << "little endian " << o;
  }
}

TEST_F(ExifSynthetic, OutOfRangeValuesMeanNoRotation) {
  for (int o : {0, 9, 255, 65535}) EXPECT_EQ(Orientation(testing::WithOrientation(plain_, o)), 1) << o;
}

TEST_F(ExifSynthetic, FirstExifSegmentWins) {
  const std::string two = testing::InsertSegment(testing::WithOrientation(plain_, 3), 0xE1,
                                                 testing::ExifPayload(6, true));
  // InsertSegment puts the new one first: orientation 6 is the first APP1.
  EXPECT_EQ(Orientation(two), 6);
  // An XMP APP1 before the EXIF one is skipped.
  const std::string xmp = testing::InsertSegment(testing::WithOrientation(plain_, 8), 0xE1,
                                                 std::string("http://ns.adobe.com/xap/1.0/\0<x/>", 34));
  EXPECT_EQ(Orientation(xmp), 8);
}

TEST_F(ExifSynthetic, MarkersReportScanAndTruncation) {
  const JpegMarkers m = ScanJpegMarkers(Bytes(plain_), plain_.size());
  EXPECT_TRUE(m.has_soi);
  EXPECT_TRUE(m.reached_sos);
  EXPECT_FALSE(m.ran_out);
  EXPECT_EQ(static_cast<uint8_t>(plain_[m.sos_offset + 1]), 0xDA);
  EXPECT_TRUE(JpegHasEoiAfter(Bytes(plain_), plain_.size(), m.sos_offset));
  EXPECT_FALSE(JpegHasEoiAfter(Bytes(plain_), plain_.size() - 2, m.sos_offset));
  const JpegMarkers cut = ScanJpegMarkers(Bytes(plain_), 30);
  EXPECT_TRUE(cut.ran_out);
  EXPECT_FALSE(cut.reached_sos);
  EXPECT_FALSE(ScanJpegMarkers(Bytes(std::string("\x89PNG")), 4).has_soi);
}

TEST_F(ExifSynthetic, MalformedExifNeverCrashesAndMeansOne) {
  const std::string good = testing::ExifPayload(6, false);
  // Every truncation of the EXIF payload, with the segment length telling the truth.
  for (size_t n = 0; n < good.size(); ++n) {
    const int o = Orientation(testing::InsertSegment(plain_, 0xE1, good.substr(0, n)));
    EXPECT_TRUE(o == 1 || (o == 6 && n >= good.size() - 6)) << n;
  }
  // Segment length larger than the file: parsed as far as it goes.
  std::string lying = plain_.substr(0, 2) + std::string("\xFF\xE1\xFF\xF0", 4) + good;
  EXPECT_EQ(Orientation(lying), 6);
  // Hex-edited TIFF header, IFD offset pointing outside, absurd entry count.
  std::string bad = good;
  bad.replace(6, 4, "\xFF\xFF\xFF\xFF");
  EXPECT_EQ(Orientation(testing::InsertSegment(plain_, 0xE1, bad)), 1);
  bad = good;
  bad.replace(10, 4, std::string("\x7F\xFF\xFF\xF0", 4));
  EXPECT_EQ(Orientation(testing::InsertSegment(plain_, 0xE1, bad)), 1);
  bad = good;
  bad.replace(14, 2, "\xFF\xFF");
  EXPECT_EQ(Orientation(testing::InsertSegment(plain_, 0xE1, bad)), 6) << "entries that fit are still read";
  // Orientation with a wrong type (ASCII) is ignored.
  bad = good;
  bad[6 + 8 + 2 + 12 + 3] = 2;
  EXPECT_EQ(Orientation(testing::InsertSegment(plain_, 0xE1, bad)), 1);
}

TEST(Exif, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  const std::string base = testing::WithOrientation(testing::MakeJpeg(testing::Blocks(16, 16)), 6);
  for (int iter = 0; iter < 5000; ++iter) {
    std::string s = base.substr(0, 2 + rng() % (base.size() - 2));
    for (int k = 0; k < 4; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    const int o = Orientation(s);
    EXPECT_GE(o, 1);
    EXPECT_LE(o, 8);
  }
  EXPECT_EQ(JpegExifOrientation(nullptr, 0), 1);
}

TEST(Exif, TiffTagReader) {
  const std::string p = testing::ExifPayload(5, true).substr(6);
  uint32_t v = 0;
  ASSERT_TRUE(ReadTiffIfd0Tag(Bytes(p), p.size(), 0x0112, &v));
  EXPECT_EQ(v, 5u);
  EXPECT_FALSE(ReadTiffIfd0Tag(Bytes(p), p.size(), 0x0100, &v));
  EXPECT_FALSE(ReadTiffIfd0Tag(Bytes(p), 7, 0x0112, &v));
}

// The decoder applies each orientation exactly as the EXIF definition says.
TEST_F(ExifSynthetic, DecodeAppliesAllEightOrientations) {
  const cv::Mat src = testing::Blocks(48, 24);
  DecodeOptions opt;
  const DecodedImage plain = DecodeImage(Bytes(plain_), plain_.size(), opt);
  ASSERT_FALSE(plain.has_error());
  for (int o = 1; o <= 8; ++o) {
    const std::string jpeg = testing::WithOrientation(plain_, o);
    const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), opt);
    ASSERT_FALSE(d.has_error()) << o;
    EXPECT_EQ(d.orientation, o);
    const bool swap = o >= 5;
    EXPECT_EQ(d.orig_w, swap ? 24 : 48);
    EXPECT_EQ(d.orig_h, swap ? 48 : 24);
    // Exactly the reference transform of the unrotated decode, and close to the source pattern.
    EXPECT_EQ(testing::MaxAbsDiff(d.rgb, testing::ReferenceOrient(plain.rgb, o)), 0) << o;
    EXPECT_LE(testing::MaxAbsDiff(d.rgb, testing::ReferenceOrient(src, o)), 12) << o;
  }
}

TEST(Exif, ApplyOrientationMatchesDefinition) {
  cv::Mat m(7, 5, CV_8UC3);
  cv::randu(m, 0, 256);
  for (int o = 1; o <= 8; ++o) {
    cv::Mat out;
    ApplyOrientation(m, o, &out);
    EXPECT_EQ(testing::MaxAbsDiff(out, testing::ReferenceOrient(m, o)), 0) << o;
  }
}

TEST(Exif, OddImagesRealFiles) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  const struct {
    const char* file;
    int orientation;
  } cases[] = {
      {"Landscape_6.jpg", 6},      {"Portrait_6.jpg", 6},         {"Landscape_0.jpg", 1},
      {"orientation_rectangle.jpg", 8}, {"empty_gps_ifd.jpg", 6}, {"invalid-exif.jpg", 1},
      {"truncated_exif_dpi.jpg", 1}, {"multiple_exif.jpg", 1},   {"ultrahdr.jpg", 1},
  };
  for (const auto& c : cases) {
    const std::string bytes = testing::ReadFile(dir / c.file);
    ASSERT_FALSE(bytes.empty()) << c.file;
    EXPECT_EQ(Orientation(bytes), c.orientation) << c.file;
  }
}

}  // namespace
}  // namespace yc
