#include "libcache/source/jpeg_encode.h"

#include <turbojpeg.h>

#include <memory>

#include "libcache/base/output_file.h"

namespace yc {

Result<std::string> EncodeJpeg(const uint8_t* rgb, int width, int height, int quality, int stride, bool full_chroma) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  if (!tj) return Status::IOError("tjInitCompress failed");
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj.get(), rgb, width, stride, height, TJPF_RGB, &buf, &size, full_chroma ? TJSAMP_444 : TJSAMP_420, quality,
                  TJFLAG_ACCURATEDCT) != 0) {
    std::string msg = tjGetErrorStr2(tj.get());
    tjFree(buf);
    return Status::IOError("JPEG encode failed: " + msg);
  }
  std::string out(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  return out;
}

Status WriteJpeg(const std::filesystem::path& path, const uint8_t* rgb, int width, int height, int quality,
                 int stride, bool full_chroma) {
  Result<std::string> jpeg = EncodeJpeg(rgb, width, height, quality, stride, full_chroma);
  if (!jpeg.ok()) return jpeg.status().WithContext(path.string());
  // Through a temp file + rename (output_file.h): a link or FIFO of that name is never opened.
  return WriteFileAtomically(path, *jpeg);
}

}  // namespace yc
