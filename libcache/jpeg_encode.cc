#include "libcache/jpeg_encode.h"

#include <turbojpeg.h>

#include <fstream>
#include <memory>

namespace yc {

Result<std::string> EncodeJpeg(const uint8_t* rgb, int width, int height, int quality, int stride) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  if (!tj) return Status::IOError("tjInitCompress failed");
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj.get(), rgb, width, stride, height, TJPF_RGB, &buf, &size, TJSAMP_420, quality,
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
                 int stride) {
  Result<std::string> jpeg = EncodeJpeg(rgb, width, height, quality, stride);
  if (!jpeg.ok()) return jpeg.status().WithContext(path.string());
  std::ofstream out(path, std::ios::binary);
  out.write(jpeg->data(), static_cast<std::streamsize>(jpeg->size()));
  out.close();
  if (!out) return Status::IOError(Status::At(path.string(), "cannot write"));
  return Status::OK();
}

}  // namespace yc
