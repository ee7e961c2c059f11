// Writes an RGB picture (CV_8UC3) atomically (libcache/base/output_file.h: a temp file beside it, then rename;
// a link or FIFO of that name is refused): .png through OpenCV
// imgcodecs when the build has it (YOLOCACHE_WITH_IMGCODECS), else libpng (YOLOCACHE_WITH_LIBPNG);
// .jpg/.jpeg through libcache's TurboJPEG encoder (always present).
//
//   YC_RETURN_IF_ERROR(WriteImageFile(dir / "labels.jpg", rgb));
#pragma once

#include <filesystem>

#include <opencv2/core.hpp>

#include "base/status.h"

namespace yc::trainer {

// Unsupported naming the file for a .png when the build has no PNG encoder; IOError naming it otherwise.
Status WriteImageFile(const std::filesystem::path& path, const cv::Mat& rgb);

// "opencv-imgcodecs", "libpng" or "none".
const char* PngEncoderName();

}  // namespace yc::trainer
