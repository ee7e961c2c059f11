// libFuzzer target for the whole decoder: format sniffing, container probes (PNG/BMP/WebP), TurboJPEG
// with its warning classification and handle resets, OpenCV imgcodecs, EXIF orientation and resize.
// Any bytes in: a verdict out, never a crash, and pixels only when there is no error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "libcache/source/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size > 0) std::memcpy(copy.get(), data, size);
  yc::DecodeOptions opt;
  opt.imgsz = 64;
  opt.max_pixels = int64_t{1} << 24;  // keep each run small
  for (bool keep : {true, false}) {
    opt.keep_pixels = keep;
    const yc::DecodedImage d = yc::DecodeImage(copy.get(), size, opt);
    if (d.has_error() && !d.rgb.empty()) std::abort();
    if (!d.has_error() && keep) {
      if (d.rgb.type() != CV_8UC3 || std::max(d.rgb.cols, d.rgb.rows) != 64) std::abort();
    }
    if (d.orientation < 1 || d.orientation > 8) std::abort();
  }
  return 0;
}
