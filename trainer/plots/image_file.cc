#include "trainer/plots/image_file.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#if YOLOCACHE_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#elif YOLOCACHE_WITH_LIBPNG
#include <png.h>
#endif

#include "libcache/base/output_file.h"
#include "libcache/source/jpeg_encode.h"

namespace yc::trainer {

namespace fs = std::filesystem;

const char* PngEncoderName() {
#if YOLOCACHE_WITH_IMGCODECS
  return "opencv-imgcodecs";
#elif YOLOCACHE_WITH_LIBPNG
  return "libpng";
#else
  return "none";
#endif
}

namespace {

// PNG bytes of an RGB picture, for one atomic write (libcache/base/output_file.h).
#if YOLOCACHE_WITH_IMGCODECS
Result<std::string> EncodePng(const cv::Mat& rgb) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> bytes;
  try {
    if (!cv::imencode(".png", bgr, bytes)) return Status::IOError("PNG encoding failed");
  } catch (const cv::Exception& e) {
    return Status::IOError(std::string("PNG encoding failed: ") + e.what());
  }
  return std::string(bytes.begin(), bytes.end());
}
#elif YOLOCACHE_WITH_LIBPNG
void AppendPng(png_structp png, png_bytep data, png_size_t size) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), size);
}

Result<std::string> EncodePng(const cv::Mat& rgb) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (png == nullptr || info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return Status::IOError("PNG encoding failed");
  }
  std::vector<png_bytep> rows(static_cast<size_t>(rgb.rows));
  for (int y = 0; y < rgb.rows; ++y) rows[static_cast<size_t>(y)] = const_cast<png_bytep>(rgb.ptr<uint8_t>(y));
  png_set_write_fn(png, &out, AppendPng, nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(rgb.cols), static_cast<png_uint_32>(rgb.rows), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}
#endif

}  // namespace

Status WriteImageFile(const fs::path& path, const cv::Mat& rgb) {
  if (rgb.empty() || rgb.type() != CV_8UC3) return Status::InvalidArgument(Status::At(path.string(), "not an RGB picture"));
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Both through a temp file + rename (libcache/base/output_file.h): readers never see a half-written file,
  // and a link or FIFO of that name is refused, never written through.
  if (ext == ".jpg" || ext == ".jpeg") {
    cv::Mat c = rgb.isContinuous() ? rgb : rgb.clone();
    return WriteJpeg(path, c.data, c.cols, c.rows, 95, static_cast<int>(c.step));
  }
  if (ext == ".png") {
#if YOLOCACHE_WITH_IMGCODECS || YOLOCACHE_WITH_LIBPNG
    Result<std::string> png = EncodePng(rgb);
    if (!png.ok()) return png.status().WithContext(path.string());
    return WriteFileAtomically(path, *png);
#else
    return Status::Unsupported(Status::At(path.string(), "no PNG encoder in this build (neither OpenCV imgcodecs nor libpng)"));
#endif
  }
  return Status::InvalidArgument(Status::At(path.string(), "pictures are written as .png or .jpg"));
}

}  // namespace yc::trainer
