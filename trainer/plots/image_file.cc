#include "trainer/plots/image_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#if YOLOCACHE_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#elif YOLOCACHE_WITH_LIBPNG
#include <png.h>
#endif

#include "libcache/jpeg_encode.h"

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

#if YOLOCACHE_WITH_IMGCODECS
Status WritePng(const cv::Mat& rgb, const fs::path& path) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> bytes;
  try {
    if (!cv::imencode(".png", bgr, bytes)) return Status::IOError(Status::At(path.string(), "PNG encoding failed"));
  } catch (const cv::Exception& e) {
    return Status::IOError(Status::At(path.string(), std::string("PNG encoding failed: ") + e.what()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::IOError(Status::At(path.string(), "cannot write"));
  return Status::OK();
}
#elif YOLOCACHE_WITH_LIBPNG
Status WritePng(const cv::Mat& rgb, const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError(Status::At(path.string(), "cannot open for writing"));
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (png == nullptr || info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return Status::IOError(Status::At(path.string(), "PNG encoding failed"));
  }
  std::vector<png_bytep> rows(static_cast<size_t>(rgb.rows));
  for (int y = 0; y < rgb.rows; ++y) rows[static_cast<size_t>(y)] = const_cast<png_bytep>(rgb.ptr<uint8_t>(y));
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(rgb.cols), static_cast<png_uint_32>(rgb.rows), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(f) != 0) return Status::IOError(Status::At(path.string(), "cannot close"));
  return Status::OK();
}
#endif

}  // namespace

Status WriteImageFile(const fs::path& path, const cv::Mat& rgb) {
  if (rgb.empty() || rgb.type() != CV_8UC3) return Status::InvalidArgument(Status::At(path.string(), "not an RGB picture"));
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // The temp name keeps the extension's meaning out of the way: readers never see a half-written file.
  const fs::path tmp = path.string() + ".tmp";
  if (ext == ".jpg" || ext == ".jpeg") {
    cv::Mat c = rgb.isContinuous() ? rgb : rgb.clone();
    YC_RETURN_IF_ERROR(WriteJpeg(tmp, c.data, c.cols, c.rows, 95, static_cast<int>(c.step)));
  } else if (ext == ".png") {
#if YOLOCACHE_WITH_IMGCODECS || YOLOCACHE_WITH_LIBPNG
    YC_RETURN_IF_ERROR(WritePng(rgb, tmp));
#else
    return Status::Unsupported(Status::At(path.string(), "no PNG encoder in this build (neither OpenCV imgcodecs nor libpng)"));
#endif
  } else {
    return Status::InvalidArgument(Status::At(path.string(), "pictures are written as .png or .jpg"));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::IOError(Status::At(path.string(), "rename failed: " + ec.message()));
  }
  return Status::OK();
}

}  // namespace yc::trainer
