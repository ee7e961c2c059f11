#include "libcache/source/image_format.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/libcache/ingest_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {
using testing::Bytes;

ImageFormat Sniff(const std::string& s) { return SniffFormat(Bytes(s), s.size()); }

TEST(ImageFormat, SniffMagicBytes) {
  EXPECT_EQ(Sniff(std::string("\xFF\xD8\xFF\xE0", 4)), ImageFormat::kJpeg);
  EXPECT_EQ(Sniff(std::string("\x89PNG\r\n\x1a\n", 8)), ImageFormat::kPng);
  EXPECT_EQ(Sniff(std::string("BM") + std::string(20, '\0')), ImageFormat::kBmp);
  EXPECT_EQ(Sniff(std::string("II*\0", 4)), ImageFormat::kTiff);
  EXPECT_EQ(Sniff(std::string("MM\0*", 4)), ImageFormat::kTiff);
  EXPECT_EQ(Sniff(std::string("RIFF\0\0\0\0WEBPVP8 ", 16)), ImageFormat::kWebp);
  EXPECT_EQ(Sniff("GIF89a"), ImageFormat::kGif);
  EXPECT_EQ(Sniff("PF\n3 2\n-1\n"), ImageFormat::kPfm);
  EXPECT_EQ(Sniff(std::string("\0\0\0\x18" "ftypheic", 12)), ImageFormat::kHeif);
  EXPECT_EQ(Sniff(std::string("RIFF\0\0\0\0WAVE", 12)), ImageFormat::kUnknown);
  EXPECT_EQ(Sniff(""), ImageFormat::kUnknown);
  EXPECT_EQ(Sniff(std::string("\xFF\xD8", 2)), ImageFormat::kUnknown);
  EXPECT_EQ(SniffFormat(nullptr, 10), ImageFormat::kUnknown);
}

TEST(ImageFormat, ExtensionsAndMismatch) {
  EXPECT_EQ(FormatFromExtension("a/b.JPG"), ImageFormat::kJpeg);
  EXPECT_EQ(FormatFromExtension("b.jpeg"), ImageFormat::kJpeg);
  EXPECT_EQ(FormatFromExtension("b.mpo"), ImageFormat::kJpeg);
  EXPECT_EQ(FormatFromExtension("b.Tif"), ImageFormat::kTiff);
  EXPECT_EQ(FormatFromExtension("b.dng"), ImageFormat::kTiff);
  EXPECT_EQ(FormatFromExtension("b.txt"), ImageFormat::kUnknown);
  EXPECT_EQ(FormatFromExtension("noext"), ImageFormat::kUnknown);
  EXPECT_TRUE(ExtensionMismatch(ImageFormat::kPng, "x/png_named_as.jpg"));
  EXPECT_FALSE(ExtensionMismatch(ImageFormat::kJpeg, "x/photo.JPEG"));
  EXPECT_FALSE(ExtensionMismatch(ImageFormat::kJpeg, "x/stereo.mpo"));
  EXPECT_FALSE(ExtensionMismatch(ImageFormat::kUnknown, "x/a.jpg")) << "unknown content is not a mismatch";
  EXPECT_STREQ(ImageFormatName(ImageFormat::kWebp), "webp");
}

TEST(ImageFormat, PngProbeFindsTruncationAndDamage) {
  const std::string png = testing::MakePng(3, 2, 8, 2, std::string(18, '\x40'));
  ImageProbe ok = ProbeImage(Bytes(png), png.size());
  EXPECT_EQ(ok.format, ImageFormat::kPng);
  EXPECT_FALSE(ok.issue.has_value());
  EXPECT_EQ(ok.width, 3);
  EXPECT_EQ(ok.height, 2);
  // Every cut before the end of IEND is a truncation (a cut inside the signature is not a PNG).
  for (size_t n = 8; n < png.size(); ++n) {
    const ImageProbe p = ProbeImage(Bytes(png), n);
    ASSERT_TRUE(p.issue.has_value()) << n;
    EXPECT_EQ(p.issue->code, ProblemCode::kTruncated) << n;
  }
  // Trailing bytes after IEND are fine (libpng ignores them).
  const std::string trailing = png + "x";
  EXPECT_FALSE(ProbeImage(Bytes(trailing), trailing.size()).issue.has_value());
  // A chunk type that is not four letters: corrupt.
  std::string bad = png;
  bad[12] = '\x01';
  const ImageProbe p = ProbeImage(Bytes(bad), bad.size());
  ASSERT_TRUE(p.issue.has_value());
  EXPECT_EQ(p.issue->code, ProblemCode::kCorruptData);
  EXPECT_EQ(p.issue->message, "invalid PNG chunk type at byte 12");
}

TEST(ImageFormat, BmpProbe) {
  // 2x2 24-bit BI_RGB: rows of 8 bytes (6 + 2 padding).
  std::string bmp = "BM";
  auto le32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) bmp += static_cast<char>(v >> (8 * i));
  };
  auto le16 = [&](uint16_t v) {
    bmp += static_cast<char>(v & 0xFF);
    bmp += static_cast<char>(v >> 8);
  };
  le32(54 + 16);
  le32(0);
  le32(54);
  le32(40);
  le32(2);
  le32(2);
  le16(1);
  le16(24);
  le32(0);
  le32(16);
  le32(0);
  le32(0);
  le32(0);
  le32(0);
  bmp += std::string(16, '\x7f');
  ImageProbe ok = ProbeImage(Bytes(bmp), bmp.size());
  EXPECT_FALSE(ok.issue.has_value());
  EXPECT_EQ(ok.width, 2);
  EXPECT_EQ(ok.height, 2);
  const ImageProbe cut = ProbeImage(Bytes(bmp), bmp.size() - 1);
  ASSERT_TRUE(cut.issue.has_value());
  EXPECT_EQ(cut.issue->code, ProblemCode::kTruncated);
  EXPECT_EQ(cut.issue->message, "BMP data ends at byte 69, pixel rows need 70 bytes");
}

TEST(ImageFormat, OddImagesProbe) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  const struct {
    const char* file;
    ImageFormat format;
    std::optional<ProblemCode> issue;
    int64_t w, h;
  } cases[] = {
      {"png_named_as.jpg", ImageFormat::kPng, std::nullopt, 128, 128},
      {"broken.png", ImageFormat::kPng, ProblemCode::kCorruptData, 0, 0},
      {"truncated_image.png", ImageFormat::kPng, ProblemCode::kTruncated, 640, 480},
      {"truncated_end_chunk.png", ImageFormat::kPng, ProblemCode::kTruncated, 128, 128},
      {"itxt_chunks.png", ImageFormat::kPng, std::nullopt, 2400, 2000},
      {"tRNS_null_1x1.png", ImageFormat::kPng, std::nullopt, 1, 1},
      {"bmpsuite_shortfile.bmp", ImageFormat::kBmp, ProblemCode::kTruncated, 127, 64},
      {"l2rgb_read.bmp", ImageFormat::kBmp, ProblemCode::kCorruptData, 3158064, 48},
      {"hopper_rle8.bmp", ImageFormat::kBmp, std::nullopt, 128, 128},
      {"hopper.webp", ImageFormat::kWebp, std::nullopt, 128, 128},
      {"zero_bytes.jpg", ImageFormat::kUnknown, std::nullopt, 0, 0},
  };
  for (const auto& c : cases) {
    const std::string bytes = testing::ReadFile(dir / c.file);
    const ImageProbe p = ProbeImage(Bytes(bytes), bytes.size());
    EXPECT_EQ(p.format, c.format) << c.file;
    EXPECT_EQ(p.issue.has_value(), c.issue.has_value()) << c.file;
    if (p.issue && c.issue) {
      EXPECT_EQ(p.issue->code, *c.issue) << c.file << ": " << p.issue->message;
    }
    EXPECT_EQ(p.width, c.w) << c.file;
    EXPECT_EQ(p.height, c.h) << c.file;
  }
}

}  // namespace
}  // namespace yc

namespace yc {
namespace {
using testing::Bytes;
using testing::MakeTiff;
using testing::TiffEntry;

// An RGB 8-bit TIFF IFD with the size tags in the given field type.
std::vector<TiffEntry> RgbTiffTags(uint16_t size_type, uint64_t w, uint64_t h) {
  return {{256, size_type, 1, w}, {257, size_type, 1, h}, {258, 3, 1, 8}, {262, 3, 1, 2}, {277, 3, 1, 3}};
}

TEST(ImageFormat, TiffSizeInEveryIntegerTypeAndBigTiff) {
  // BYTE, SHORT, LONG, SBYTE, SSHORT, SLONG, IFD: libtiff reads a size from all of them.
  for (uint16_t type : {1, 3, 4, 6, 8, 9, 13}) {
    const std::string tiff = MakeTiff(false, RgbTiffTags(type, 100, 50));
    const ImageProbe p = ProbeImage(Bytes(tiff), tiff.size());
    EXPECT_EQ(p.format, ImageFormat::kTiff);
    EXPECT_FALSE(p.issue.has_value()) << type << ": " << p.issue->message;
    EXPECT_EQ(p.width, 100) << type;
    EXPECT_EQ(p.height, 50) << type;
    EXPECT_EQ(p.bytes_per_pixel, 4) << "RGB may come out as BGRA";
  }
  // SLONG 20000 x 20000: the bypass of issue 18.
  const std::string slong = MakeTiff(false, RgbTiffTags(9, 20000, 20000));
  EXPECT_EQ(ProbeImage(Bytes(slong), slong.size()).width, 20000);
  // BigTIFF with LONG8 (and SHORT) sizes.
  for (uint16_t type : {3, 4, 16, 17, 18}) {
    const std::string big = MakeTiff(true, RgbTiffTags(type, 20000, 30000));
    const ImageProbe p = ProbeImage(Bytes(big), big.size());
    EXPECT_FALSE(p.issue.has_value()) << type << ": " << p.issue->message;
    EXPECT_EQ(p.width, 20000) << type;
    EXPECT_EQ(p.height, 30000) << type;
  }
  // A LONG8 value beyond 2^63 still gives a size the decoder refuses (clamped, not wrapped).
  const std::string huge = MakeTiff(true, RgbTiffTags(16, ~uint64_t{0}, 1));
  EXPECT_GT(ProbeImage(Bytes(huge), huge.size()).width, int64_t{1} << 40);
}

TEST(ImageFormat, TiffBytesPerPixelFromSampleTags) {
  auto bpp = [](std::vector<TiffEntry> tags) {
    const std::string t = MakeTiff(false, tags);
    const ImageProbe p = ProbeImage(Bytes(t), t.size());
    EXPECT_FALSE(p.issue.has_value());
    return p.bytes_per_pixel;
  };
  EXPECT_EQ(bpp({{256, 3, 1, 10}, {257, 3, 1, 10}, {258, 3, 1, 8}, {262, 3, 1, 1}}), 1);  // grey
  EXPECT_EQ(bpp({{256, 3, 1, 10}, {257, 3, 1, 10}, {258, 3, 1, 16}, {262, 3, 1, 1}}), 2);  // grey 16
  EXPECT_EQ(bpp({{256, 3, 1, 10}, {257, 3, 1, 10}}), 1);  // defaults: 1 bit, 1 sample
  EXPECT_EQ(bpp({{256, 3, 1, 10}, {257, 3, 1, 10}, {258, 3, 1, 16}, {262, 3, 1, 2}, {277, 3, 1, 4}}), 8);
  EXPECT_EQ(bpp({{256, 3, 1, 10}, {257, 3, 1, 10}, {258, 3, 1, 32}, {262, 3, 1, 2}, {277, 3, 1, 3}}), 16);
  EXPECT_EQ(bpp({{256, 3, 1, 10}, {257, 3, 1, 10}, {258, 3, 1, 8}, {262, 3, 1, 3}}), 4);  // palette
  // A repeated size tag counts with its largest value.
  const std::string twice = MakeTiff(false, {{256, 3, 1, 10}, {256, 4, 1, 90000}, {257, 3, 1, 10}});
  EXPECT_EQ(ProbeImage(Bytes(twice), twice.size()).width, 90000);
}

TEST(ImageFormat, TiffSizesThatCannotBeParsedAreReported) {
  struct Case {
    std::string tiff;
    ProblemCode code;
    const char* message;
  } cases[] = {
      {MakeTiff(false, RgbTiffTags(5, 100, 50)), ProblemCode::kCorruptData,
       "TIFF ImageWidth has field type 5, not an integer type"},  // RATIONAL
      {MakeTiff(false, RgbTiffTags(12, 100, 50)), ProblemCode::kCorruptData,
       "TIFF ImageWidth has field type 12, not an integer type"},  // DOUBLE
      {MakeTiff(false, RgbTiffTags(16, 100, 50)), ProblemCode::kCorruptData,
       "TIFF ImageWidth has field type 16, not an integer type"},  // LONG8 outside BigTIFF
      {MakeTiff(false, RgbTiffTags(9, 0xFFFFB1E0u, 50)), ProblemCode::kCorruptData,
       "TIFF ImageWidth is negative (-20000)"},
      {MakeTiff(false, RgbTiffTags(8, 100, 0xFFFF)), ProblemCode::kCorruptData, "TIFF ImageLength is negative (-1)"},
      {MakeTiff(false, {{256, 3, 1, 100}, {258, 3, 1, 8}}), ProblemCode::kCorruptData,
       "TIFF IFD0 has no ImageLength tag"},
      {MakeTiff(false, RgbTiffTags(3, 0, 50)), ProblemCode::kCorruptData, "TIFF declares an invalid size 0x50"},
      {MakeTiff(false, {{256, 3, 0, 100}, {257, 3, 1, 50}}), ProblemCode::kCorruptData, "TIFF ImageWidth has no value"},
      // Two LONG values do not fit in the entry: they are at an offset past the end of the file.
      {MakeTiff(false, {{256, 4, 2, 4000}, {257, 3, 1, 50}}), ProblemCode::kTruncated,
       "TIFF data ends at byte 38 before the ImageWidth value"},
  };
  for (const Case& c : cases) {
    const ImageProbe p = ProbeImage(Bytes(c.tiff), c.tiff.size());
    ASSERT_TRUE(p.issue.has_value()) << c.message;
    EXPECT_EQ(p.issue->code, c.code) << c.message;
    EXPECT_EQ(p.issue->message, c.message);
  }
  // Cut anywhere inside the header or IFD0: truncated, never a read past the end.
  const std::string big = MakeTiff(true, RgbTiffTags(16, 100, 50));
  for (size_t n = 4; n < big.size() - 8; ++n) {
    const ImageProbe p = ProbeImage(Bytes(big), n);
    ASSERT_TRUE(p.issue.has_value()) << n;
    EXPECT_EQ(p.issue->code, ProblemCode::kTruncated) << n;
  }
}

TEST(ImageFormat, PngBytesPerPixelFromDepthColourAndTrns) {
  auto probe = [](const std::string& png) { return ProbeImage(Bytes(png), png.size()); };
  EXPECT_EQ(probe(testing::MakePng(2, 1, 8, 2, std::string(6, '\0'))).bytes_per_pixel, 3);
  EXPECT_EQ(probe(testing::MakePng(2, 1, 8, 0, std::string(2, '\0'))).bytes_per_pixel, 1);
  EXPECT_EQ(probe(testing::MakePng(2, 1, 16, 0, std::string(4, '\0'))).bytes_per_pixel, 2);
  EXPECT_EQ(probe(testing::MakePng(2, 1, 16, 6, std::string(16, '\0'))).bytes_per_pixel, 8);
  EXPECT_EQ(probe(testing::MakePng(2, 1, 8, 4, std::string(4, '\0'))).bytes_per_pixel, 4);
  // A tRNS chunk makes RGB come out as BGRA.
  std::string rgb = testing::MakePng(2, 1, 8, 2, std::string(6, '\0'));
  const std::string trns("\0\0\0\x06tRNS\0\0\0\0\0\0\x00\x00\x00\x00", 4 + 4 + 6 + 4);
  rgb.insert(8 + 25, trns);  // after IHDR (the probe does not check CRCs)
  EXPECT_EQ(probe(rgb).bytes_per_pixel, 4);
  // Depths the colour type does not allow are refused as libpng refuses them.
  const ImageProbe bad = probe(testing::MakePng(2, 1, 16, 3, std::string(4, '\0')));
  ASSERT_TRUE(bad.issue.has_value());
  EXPECT_EQ(bad.issue->code, ProblemCode::kCorruptData);
  EXPECT_EQ(bad.issue->message, "PNG IHDR bit depth 16 is invalid for colour type 3");
}

}  // namespace
}  // namespace yc
