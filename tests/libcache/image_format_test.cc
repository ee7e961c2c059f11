#include "libcache/image_format.h"

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
