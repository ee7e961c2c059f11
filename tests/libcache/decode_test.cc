#include "libcache/source/decode.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

#include "tests/libcache/ingest_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {
using testing::Bytes;

bool HasCode(const DecodedImage& d, ProblemCode code) {
  for (const Issue& i : d.issues) {
    if (i.code == code) return true;
  }
  return false;
}

// What a bare TurboJPEG decode gives (the reference for pixel equality).
cv::Mat BareDecode(const std::string& jpeg) {
  tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, ss = 0, cs = 0;
  EXPECT_EQ(tjDecompressHeader3(tj, Bytes(jpeg), jpeg.size(), &w, &h, &ss, &cs), 0);
  cv::Mat m(h, w, CV_8UC3);
  EXPECT_EQ(tjDecompress2(tj, Bytes(jpeg), jpeg.size(), m.data, w, 0, h, TJPF_RGB, 0), 0);
  tjDestroy(tj);
  return m;
}

TEST(ResizeTarget, UltralyticsLoadImageMath) {
  EXPECT_EQ(ResizeTarget(480, 640, 640), cv::Size(640, 480));  // r == 1: untouched
  EXPECT_EQ(ResizeTarget(480, 640, 320), cv::Size(320, 240));
  EXPECT_EQ(ResizeTarget(428, 640, 320), cv::Size(320, 214));
  EXPECT_EQ(ResizeTarget(427, 640, 320), cv::Size(320, 214));  // ceil(213.5)
  EXPECT_EQ(ResizeTarget(1200, 1800, 640), cv::Size(640, 427));  // ceil(426.67)
  EXPECT_EQ(ResizeTarget(100, 50, 640), cv::Size(320, 640));  // upscaling too
  EXPECT_EQ(ResizeTarget(333, 333, 640), cv::Size(640, 640));  // min(ceil(w0 r), imgsz)
  EXPECT_EQ(ResizeTarget(480, 640, 0), cv::Size(640, 480));
  EXPECT_EQ(ResizeTarget(1, 5000, 640), cv::Size(640, 1));
}

TEST(Decode, RgbJpegMatchesBareTurboJpeg) {
  const cv::Mat src = testing::Blocks(64, 40);
  const std::string jpeg = testing::MakeJpeg(src, 90, TJSAMP_420);
  const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), DecodeOptions{});
  ASSERT_TRUE(d.issues.empty());
  EXPECT_EQ(d.format, ImageFormat::kJpeg);
  EXPECT_EQ(d.orig_w, 64);
  EXPECT_EQ(d.orig_h, 40);
  ASSERT_EQ(d.rgb.type(), CV_8UC3);
  EXPECT_EQ(testing::MaxAbsDiff(d.rgb, BareDecode(jpeg)), 0);
  // RGB order, not BGR: block (0,0) is R=40, G=30, B=20 in the source.
  const cv::Vec3b px = d.rgb.at<cv::Vec3b>(3, 3);
  EXPECT_NEAR(px[0], 40, 6);
  EXPECT_NEAR(px[1], 30, 6);
  EXPECT_NEAR(px[2], 20, 6);
}

TEST(Decode, ResizeIsCvResizeLinearOfTheFullDecode) {
  const std::string jpeg = testing::MakeJpeg(testing::Blocks(200, 120));
  DecodeOptions opt;
  opt.imgsz = 96;
  const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), opt);
  ASSERT_FALSE(d.has_error());
  EXPECT_EQ(d.orig_w, 200);
  EXPECT_EQ(d.orig_h, 120);
  ASSERT_EQ(d.rgb.size(), cv::Size(96, 58));  // ceil(120 * 0.48) = 58
  cv::Mat ref;
  cv::resize(BareDecode(jpeg), ref, cv::Size(96, 58), 0, 0, cv::INTER_LINEAR);
  EXPECT_EQ(testing::MaxAbsDiff(d.rgb, ref), 0);
}

TEST(Decode, OrientationAfterResizeEqualsResizeAfterOrientation) {
  const std::string plain = testing::MakeJpeg(testing::Blocks(200, 120));
  const cv::Mat full = BareDecode(plain);
  for (int o = 1; o <= 8; ++o) {
    const std::string jpeg = testing::WithOrientation(plain, o);
    DecodeOptions opt;
    opt.imgsz = 96;
    const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), opt);
    ASSERT_FALSE(d.has_error());
    const cv::Mat oriented = testing::ReferenceOrient(full, o);
    const cv::Size target = ResizeTarget(oriented.rows, oriented.cols, 96);
    cv::Mat ref;
    cv::resize(oriented, ref, target, 0, 0, cv::INTER_LINEAR);
    ASSERT_EQ(d.rgb.size(), target) << o;
    // OpenCV's fixed-point bilinear rounds its two passes differently when the axes swap.
    EXPECT_LE(testing::MaxAbsDiff(d.rgb, ref), 1) << o;
  }
}

TEST(Decode, GrayscaleJpegBecomesThreeChannels) {
  cv::Mat gray(32, 48, CV_8UC1);
  for (int y = 0; y < gray.rows; ++y)
    for (int x = 0; x < gray.cols; ++x) gray.at<uint8_t>(y, x) = static_cast<uint8_t>(x * 5);
  const std::string jpeg = testing::MakeJpeg(gray);
  const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), DecodeOptions{});
  ASSERT_FALSE(d.has_error());
  ASSERT_EQ(d.rgb.type(), CV_8UC3);
  const cv::Vec3b px = d.rgb.at<cv::Vec3b>(10, 20);
  EXPECT_EQ(px[0], px[1]);
  EXPECT_EQ(px[1], px[2]);
  EXPECT_NEAR(px[0], 100, 4);
}

TEST(Decode, TruncationIsAnErrorNotAGreyImage) {
  const std::string jpeg = testing::MakeJpeg(testing::Blocks(256, 256), 95);
  for (size_t keep : {jpeg.size() - 2, jpeg.size() * 3 / 5, size_t{700}, size_t{300}}) {
    const std::string cut = jpeg.substr(0, keep);
    for (bool keep_pixels : {true, false}) {
      DecodeOptions opt;
      opt.keep_pixels = keep_pixels;
      const DecodedImage d = DecodeImage(Bytes(cut), cut.size(), opt);
      EXPECT_TRUE(HasCode(d, ProblemCode::kTruncated)) << keep << " " << d.issues.size();
      EXPECT_TRUE(d.has_error());
      EXPECT_TRUE(d.rgb.empty());
    }
  }
  // The handle survives damaged files: the next good decode still works.
  const DecodedImage ok = DecodeImage(Bytes(jpeg), jpeg.size(), DecodeOptions{});
  EXPECT_TRUE(ok.issues.empty());
}

TEST(Decode, VerifyOnlyDecodeKeepsNoPixelsButKnowsTheSize) {
  const std::string jpeg = testing::WithOrientation(testing::MakeJpeg(testing::Blocks(80, 40)), 6);
  DecodeOptions opt;
  opt.keep_pixels = false;
  const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), opt);
  EXPECT_TRUE(d.issues.empty());
  EXPECT_TRUE(d.rgb.empty());
  EXPECT_EQ(d.orig_w, 40);
  EXPECT_EQ(d.orig_h, 80);
}

TEST(Decode, EmptyAndGarbage) {
  EXPECT_TRUE(HasCode(DecodeImage(nullptr, 0, DecodeOptions{}), ProblemCode::kEmptyFile));
  const std::string junk = "hello, this is not an image";
  const DecodedImage d = DecodeImage(Bytes(junk), junk.size(), DecodeOptions{});
  ASSERT_EQ(d.issues.size(), 1u);
  EXPECT_EQ(d.issues[0].code, ProblemCode::kUnsupportedFormat);
  EXPECT_EQ(d.issues[0].message, "not a known image format (first bytes 68656c6c)");
  const std::string soi_only = "\xFF\xD8\xFF";
  EXPECT_TRUE(DecodeImage(Bytes(soi_only), soi_only.size(), DecodeOptions{}).has_error());
}

TEST(Decode, DecompressionBombsRefusedBeforeAllocating) {
  // A JPEG whose SOF claims 60000 x 60000.
  std::string jpeg = testing::MakeJpeg(testing::Blocks(16, 16));
  const size_t sof = jpeg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  jpeg[sof + 5] = static_cast<char>(0xEA);
  jpeg[sof + 6] = static_cast<char>(0x60);
  jpeg[sof + 7] = static_cast<char>(0xEA);
  jpeg[sof + 8] = static_cast<char>(0x60);
  const DecodedImage d = DecodeImage(Bytes(jpeg), jpeg.size(), DecodeOptions{});
  ASSERT_EQ(d.issues.size(), 1u);
  EXPECT_EQ(d.issues[0].code, ProblemCode::kUnsupportedFormat);
  EXPECT_EQ(d.issues[0].message, "JPEG is 60000x60000, above the decode limit of 268435456 pixels");
  EXPECT_EQ(d.orig_w, 60000);

  // A PNG whose IHDR claims 100000 x 100000 (refused whether or not imgcodecs is built in).
  std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\x01\x86\xa0\0\x01\x86\xa0\x08\x02\0\0\0\0\0\0\0"
                  "\0\0\0\0IEND\xae\x42\x60\x82",
                  8 + 25 + 12);
  const DecodedImage p = DecodeImage(Bytes(png), png.size(), DecodeOptions{});
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_EQ(p.issues[0].code, ProblemCode::kUnsupportedFormat);
  EXPECT_EQ(p.issues[0].message, "png is 100000x100000, above the decode limit of 268435456 pixels");
}

TEST(Decode, ReusesTheOutputBuffer) {
  const std::string jpeg = testing::MakeJpeg(testing::Blocks(64, 48));
  DecodedImage out;
  DecodeImage(Bytes(jpeg), jpeg.size(), DecodeOptions{}, &out);
  const uint8_t* first = out.rgb.data;
  DecodeImage(Bytes(jpeg), jpeg.size(), DecodeOptions{}, &out);
  EXPECT_EQ(out.rgb.data, first);
}

TEST(Decode, CmykJpegGivesSaneColours) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  const std::string bytes = testing::ReadFile(dir / "pil_sample_cmyk.jpg");
  const DecodedImage d = DecodeImage(Bytes(bytes), bytes.size(), DecodeOptions{});
  ASSERT_TRUE(d.issues.empty());
  ASSERT_EQ(d.rgb.size(), cv::Size(100, 100));
  ASSERT_EQ(d.rgb.type(), CV_8UC3);
  // Pillow's own test of this file: top-left is red (C=0, M,Y high, K=0), bottom-right black (K high).
  const cv::Vec3b tl = d.rgb.at<cv::Vec3b>(0, 0);
  EXPECT_GT(tl[0], 200);
  EXPECT_LT(tl[1], 60);
  EXPECT_LT(tl[2], 60);
  const cv::Vec3b br = d.rgb.at<cv::Vec3b>(99, 99);
  EXPECT_LT(br[0] + br[1] + br[2], 60);
}

TEST(Decode, ExifRotatedPhotoIsLandscape) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  const std::string bytes = testing::ReadFile(dir / "Landscape_6.jpg");
  DecodeOptions opt;
  opt.imgsz = 640;
  const DecodedImage d = DecodeImage(Bytes(bytes), bytes.size(), opt);
  ASSERT_TRUE(d.issues.empty());
  EXPECT_EQ(d.orig_w, 1800);
  EXPECT_EQ(d.orig_h, 1200);
  EXPECT_EQ(d.rgb.size(), cv::Size(640, 427));
  // The same photo stored upright (orientation 0 = none) must look the same after rotation.
  const std::string upright = testing::ReadFile(dir / "Landscape_0.jpg");
  const DecodedImage u = DecodeImage(Bytes(upright), upright.size(), opt);
  ASSERT_EQ(u.rgb.size(), d.rgb.size());
  cv::Mat diff;
  cv::absdiff(u.rgb, d.rgb, diff);
  EXPECT_LT(cv::mean(diff)[0], 12.0) << "rotated the wrong way?";
}

TEST(Decode, ImgcodecsFormats) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  for (const char* file : {"png_named_as.jpg", "monkey16.png", "i_trns.png", "apng_mode_16bit.png", "pil123p.png",
                           "hopper_rle8.bmp", "hopper.webp"}) {
    const std::string bytes = testing::ReadFile(dir / file);
    DecodeOptions opt;
    opt.imgsz = 64;
    const DecodedImage d = DecodeImage(Bytes(bytes), bytes.size(), opt);
    if (DecoderHasImgcodecs()) {
      EXPECT_TRUE(d.issues.empty()) << file << ": " << d.issues[0].message;
      EXPECT_EQ(d.rgb.type(), CV_8UC3) << file;
      EXPECT_EQ(std::max(d.rgb.cols, d.rgb.rows), 64) << file;
    } else {
      ASSERT_EQ(d.issues.size(), 1u) << file;
      EXPECT_EQ(d.issues[0].code, ProblemCode::kUnsupportedFormat) << file;
      EXPECT_TRUE(d.rgb.empty());
    }
  }
}

TEST(Decode, PngDepthAndChannelConversions) {
  // 16-bit grey 0x12FF: OpenCV's IMREAD_COLOR keeps the high byte (18), where /257 would round to 19.
  const std::string gray16 = testing::MakePng(2, 1, 16, 0, std::string("\x12\xFF\xAB\x00", 4));
  // 8-bit RGBA: alpha dropped, not blended.
  const std::string rgba = testing::MakePng(1, 1, 8, 6, std::string("\x0A\x14\x1E\x00", 4));
  // 16-bit RGB.
  const std::string rgb16 = testing::MakePng(1, 1, 16, 2, std::string("\x01\x02\x80\x00\xFE\xFF", 6));
  const DecodedImage g = DecodeImage(testing::Bytes(gray16), gray16.size(), DecodeOptions{});
  const DecodedImage a = DecodeImage(testing::Bytes(rgba), rgba.size(), DecodeOptions{});
  const DecodedImage c = DecodeImage(testing::Bytes(rgb16), rgb16.size(), DecodeOptions{});
  if (!DecoderHasImgcodecs()) {
    for (const DecodedImage* d : {&g, &a, &c}) {
      ASSERT_EQ(d->issues.size(), 1u);
      EXPECT_EQ(d->issues[0].code, ProblemCode::kUnsupportedFormat);
      EXPECT_EQ(d->issues[0].message, "png needs OpenCV imgcodecs, which this build does not have");
    }
    return;
  }
  ASSERT_TRUE(g.issues.empty()) << g.issues[0].message;
  ASSERT_EQ(g.rgb.size(), cv::Size(2, 1));
  EXPECT_EQ(g.rgb.at<cv::Vec3b>(0, 0), cv::Vec3b(18, 18, 18));
  EXPECT_EQ(g.rgb.at<cv::Vec3b>(0, 1), cv::Vec3b(0xAB, 0xAB, 0xAB));
  ASSERT_TRUE(a.issues.empty());
  EXPECT_EQ(a.rgb.at<cv::Vec3b>(0, 0), cv::Vec3b(10, 20, 30));
  ASSERT_TRUE(c.issues.empty());
  EXPECT_EQ(c.rgb.at<cv::Vec3b>(0, 0), cv::Vec3b(1, 0x80, 0xFE));
}

TEST(Decode, HugeBmpHeaderDoesNotAllocate) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  struct rusage before {};
  getrusage(RUSAGE_SELF, &before);
  const std::string bytes = testing::ReadFile(dir / "l2rgb_read.bmp");
  const DecodedImage d = DecodeImage(Bytes(bytes), bytes.size(), DecodeOptions{});
  struct rusage after {};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_TRUE(d.has_error());
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 100 * 1024) << "peak RSS grew by over 100 MiB";
}

}  // namespace
}  // namespace yc

namespace yc {
namespace {
using testing::Bytes;

std::string Outcome(const DecodedImage& d) {
  std::string s;
  for (const Issue& i : d.issues) s += std::string(ProblemCodeName(i.code)) + ": " + i.message + "\n";
  if (!d.out_of_memory.empty()) s += "out of memory: " + d.out_of_memory + "\n";
  return s;
}

TEST(Decode, SixteenBitPngBombRefusedByDecodedBytes) {
  // 16384 x 16384 RGBA 16-bit zeros: within the pixel limit (2^28), 13 MB on disk, 2 GiB decoded.
  const std::string png = testing::MakeZeroPng(16384, 16384, 16, 6);
  const std::string out = testing::UnderMemoryCap(uint64_t{1} << 30, [&] {
    return Outcome(DecodeImage(Bytes(png), png.size(), DecodeOptions{}));
  });
  EXPECT_EQ(out,
            "unsupported-format: png is 16384x16384 at 8 bytes per pixel (2147483648 bytes decoded), above the "
            "decode limit of 1073741824 bytes\n");
  // Verify-only decodes are bounded the same way (verify and build must exclude the same images).
  DecodeOptions verify;
  verify.keep_pixels = false;
  EXPECT_EQ(Outcome(DecodeImage(Bytes(png), png.size(), verify)), out);
  // The same stream at a small size is a real PNG of zeros.
  if (DecoderHasImgcodecs()) {
    const std::string small = testing::MakeZeroPng(300, 200, 16, 6);
    const DecodedImage d = DecodeImage(Bytes(small), small.size(), DecodeOptions{});
    ASSERT_TRUE(d.issues.empty()) << Outcome(d);
    EXPECT_EQ(d.rgb.size(), cv::Size(300, 200));
    EXPECT_EQ(cv::countNonZero(d.rgb.reshape(1)), 0);
  }
}

TEST(Decode, TiffBombsWithSlongOrBigTiffSizesRefused) {
  using testing::TiffEntry;
  // 20000 x 20000 RGB, uncompressed strips whose data is missing: the size tags decide the allocation.
  auto tags = [](uint16_t size_type) {
    return std::vector<TiffEntry>{{256, size_type, 1, 20000}, {257, size_type, 1, 20000}, {258, 3, 1, 8},
                                  {259, 3, 1, 1},           {262, 3, 1, 2},           {273, 4, 1, 200},
                                  {277, 3, 1, 3},           {278, 4, 1, 20000},       {279, 4, 1, 1200000000}};
  };
  for (const std::string& tiff :
       {testing::MakeTiff(false, tags(9)), testing::MakeTiff(false, tags(8)), testing::MakeTiff(true, tags(16)),
        testing::MakeTiff(true, tags(4))}) {
    const std::string out = testing::UnderMemoryCap(uint64_t{1} << 30, [&] {
      return Outcome(DecodeImage(Bytes(tiff), tiff.size(), DecodeOptions{}));
    });
    EXPECT_EQ(out, "unsupported-format: tiff is 20000x20000, above the decode limit of 268435456 pixels\n");
  }
  // Within the pixel limit, 16-bit RGBA samples are bounded by bytes: 12000 x 12000 x 8 = 1.15 GB.
  std::vector<TiffEntry> wide = {{256, 9, 1, 12000}, {257, 9, 1, 12000}, {258, 3, 1, 16}, {262, 3, 1, 2}, {277, 3, 1, 4}};
  const std::string tiff = testing::MakeTiff(false, wide);
  EXPECT_EQ(Outcome(DecodeImage(Bytes(tiff), tiff.size(), DecodeOptions{})),
            "unsupported-format: tiff is 12000x12000 at 8 bytes per pixel (1152000000 bytes decoded), above the "
            "decode limit of 1073741824 bytes\n");
}

std::string ProgressiveJpeg(const cv::Mat& rgb, int subsamp) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, rgb.data, rgb.cols, static_cast<int>(rgb.step[0]), rgb.rows, TJPF_RGB, &buf, &size,
                             subsamp, 90, TJFLAG_PROGRESSIVE);
  std::string out = rc == 0 ? std::string(reinterpret_cast<char*>(buf), size) : "";
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

TEST(Decode, ProgressiveJpegCountsItsCoefficientBuffer) {
  const cv::Mat img = testing::Blocks(64, 48);
  const std::string baseline = testing::MakeJpeg(img);
  const std::string p444 = ProgressiveJpeg(img, TJSAMP_444), p420 = ProgressiveJpeg(img, TJSAMP_420);
  ASSERT_FALSE(p444.empty());
  EXPECT_EQ(JpegCoefficientBytesPerPixel(Bytes(baseline), baseline.size()), 0);
  EXPECT_EQ(JpegCoefficientBytesPerPixel(Bytes(p444), p444.size()), 6);  // 3 components x 2 bytes
  EXPECT_EQ(JpegCoefficientBytesPerPixel(Bytes(p420), p420.size()), 3);  // (4 + 1 + 1) x 2 / 4
  EXPECT_EQ(Outcome(DecodeImage(Bytes(p444), p444.size(), DecodeOptions{})), "");
  // 12000 x 12000 is within the pixel limit; progressive 4:4:4 it needs 9 bytes per pixel.
  std::string big = p444;
  const size_t sof = big.find("\xFF\xC2");
  ASSERT_NE(sof, std::string::npos);
  big[sof + 5] = big[sof + 7] = static_cast<char>(12000 >> 8);
  big[sof + 6] = big[sof + 8] = static_cast<char>(12000 & 0xFF);
  EXPECT_EQ(Outcome(DecodeImage(Bytes(big), big.size(), DecodeOptions{})),
            "unsupported-format: JPEG is 12000x12000 at 9 bytes per pixel (1296000000 bytes decoded), above the "
            "decode limit of 1073741824 bytes\n");
  for (size_t n = 0; n < p444.size(); ++n) JpegCoefficientBytesPerPixel(Bytes(p444), n);  // any cut: no overread
}

TEST(Decode, OutOfMemoryIsReportedAsSuchNotAsCorruptData) {
  if (testing::kSanitizedBuild) GTEST_SKIP() << "ASan reserves terabytes of address space: no memory cap possible";
  // 8000 x 8000 RGB needs 192 MB of output, allocated before the scan is read; the child may grow by
  // 16 MB only. (192 MB is above what the per-thread scratch keeps between images, so no earlier test
  // left a buffer that large to reuse.)
  const std::string jpeg = testing::WithSofSize(testing::MakeJpeg(testing::Blocks(16, 16)), 8000, 8000);
  for (int imgsz : {0, 640}) {  // straight into the output (cv::Mat), or through per-thread scratch (vector)
    const std::string out = testing::UnderMemoryCap(uint64_t{16} << 20, [&] {
      DecodeOptions o;
      o.imgsz = imgsz;
      return Outcome(DecodeImage(Bytes(jpeg), jpeg.size(), o));
    });
    EXPECT_EQ(out.rfind("out of memory: ", 0), 0u) << imgsz << ": " << out;
    EXPECT_EQ(out.find("corrupt-data"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace yc
