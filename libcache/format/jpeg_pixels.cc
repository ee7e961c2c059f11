#include "libcache/format/jpeg_pixels.h"

#include <turbojpeg.h>

#include <cmath>
#include <limits>
#include <string>

namespace yc {
namespace {

// One TurboJPEG handle of each kind per thread: creating one allocates libjpeg state, too costly per
// record, and a handle must not be shared between threads.
struct TjHandle {
  explicit TjHandle(bool compress) : compress(compress), handle(compress ? tjInitCompress() : tjInitDecompress()) {}
  ~TjHandle() {
    if (handle != nullptr) tjDestroy(handle);
  }
  // libjpeg-turbo 2.1 leaves a handle unusable after some fatal errors (see libcache/source/decode.cc,
  // ResetThreadTj): a fresh one after every failure keeps one damaged record from failing the next.
  void Reset() {
    if (handle != nullptr) tjDestroy(handle);
    handle = compress ? tjInitCompress() : tjInitDecompress();
  }
  bool compress;
  tjhandle handle;
};

TjHandle& ThreadCompressor() {
  thread_local TjHandle h(true);
  return h;
}
TjHandle& ThreadDecompressor() {
  thread_local TjHandle h(false);
  return h;
}

Status Bad(const std::string& reason) { return Status::Corruption("record: jpeg: " + reason); }

// TurboJPEG takes sizes as unsigned long and sides as int.
bool FitsTj(uint64_t size) { return size <= std::numeric_limits<unsigned long>::max(); }

}  // namespace

uint64_t JpegPixelsBound(int h, int w) { return tjBufSize(w, h, TJSAMP_420); }

Status EncodeJpegPixels(const uint8_t* rgb, int h, int w, int quality, uint8_t* dst, uint64_t capacity,
                        uint64_t* written) {
  if (quality < kMinJpegQuality || quality > kMaxJpegQuality)
    return Status::InvalidArgument("record: jpeg quality " + std::to_string(quality) + " outside 1..100");
  if (capacity < JpegPixelsBound(h, w) || !FitsTj(capacity))
    return Status::InvalidArgument("record: jpeg output buffer too small");
  TjHandle& tj = ThreadCompressor();
  if (tj.handle == nullptr) return Status::IOError("record: cannot create a TurboJPEG compressor");
  unsigned char* out = dst;
  unsigned long size = static_cast<unsigned long>(capacity);
  // NOREALLOC: TurboJPEG writes into the record's own buffer (sized by tjBufSize) and never frees it.
  if (tjCompress2(tj.handle, rgb, w, w * 3, h, TJPF_RGB, &out, &size, TJSAMP_420, quality,
                  TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0) {
    const std::string why = tjGetErrorStr2(tj.handle);
    tj.Reset();
    return Status::InvalidArgument("record: jpeg encode failed: " + why);
  }
  *written = size;
  return Status::OK();
}

Status CheckJpegPixels(const uint8_t* data, uint64_t size, uint32_t h, uint32_t w) {
  if (!FitsTj(size)) return Bad("stream too large");
  TjHandle& tj = ThreadDecompressor();
  if (tj.handle == nullptr) return Status::IOError("record: cannot create a TurboJPEG decompressor");
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.handle, data, static_cast<unsigned long>(size), &width, &height, &subsamp, &colorspace) != 0) {
    const std::string why = tjGetErrorStr2(tj.handle);
    tj.Reset();
    return Bad("pixel bytes are not a JPEG stream (" + why + ")");
  }
  if (static_cast<uint32_t>(height) != h || static_cast<uint32_t>(width) != w)
    return Bad("stream is " + std::to_string(height) + "x" + std::to_string(width) + ", the header " + std::to_string(h) +
               "x" + std::to_string(w));
  if (colorspace != TJCS_YCbCr) return Bad("stream is not YCbCr (colorspace " + std::to_string(colorspace) + ")");
  return Status::OK();
}

Status DecodeJpegPixels(const uint8_t* data, uint64_t size, uint32_t h, uint32_t w, uint8_t* dst) {
  if (!FitsTj(size)) return Bad("stream too large");
  TjHandle& tj = ThreadDecompressor();
  if (tj.handle == nullptr) return Status::IOError("record: cannot create a TurboJPEG decompressor");
  // STOPONWARNING: libjpeg "recovers" from a damaged stream by filling grey; a record must be exact.
  // LIMITSCANS: a hostile progressive stream cannot make the decoder loop over thousands of scans.
  if (tjDecompress2(tj.handle, data, static_cast<unsigned long>(size), dst, static_cast<int>(w), static_cast<int>(w) * 3,
                    static_cast<int>(h), TJPF_RGB, TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    const std::string why = tjGetErrorStr2(tj.handle);
    tj.Reset();
    return Bad("decode failed (" + why + ")");
  }
  return Status::OK();
}

double PixelPsnr(const uint8_t* a, const uint8_t* b, uint64_t n) {
  uint64_t squared = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const int d = int{a[i]} - int{b[i]};
    squared += static_cast<uint64_t>(d * d);
  }
  if (squared == 0 || n == 0) return std::numeric_limits<double>::infinity();
  const double mse = static_cast<double>(squared) / static_cast<double>(n);
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace yc
