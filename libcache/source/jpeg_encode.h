// RGB pixels -> JPEG bytes with TurboJPEG (synth images, inspect previews, exported samples).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/status.h"

namespace yc {

// `stride` 0 means width * 3. Quality 1..100, 4:2:0 subsampling (`full_chroma`: 4:4:4, as PIL's
// subsampling=0 that Ultralytics' crops are saved with).
Result<std::string> EncodeJpeg(const uint8_t* rgb, int width, int height, int quality, int stride = 0,
                               bool full_chroma = false);

// Encodes and writes to `path` atomically (libcache/base/output_file.h: a temp file renamed over it; a
// symbolic link, FIFO or folder of that name is refused); IOError naming it on failure.
Status WriteJpeg(const std::filesystem::path& path, const uint8_t* rgb, int width, int height, int quality = 90,
                 int stride = 0, bool full_chroma = false);

}  // namespace yc
