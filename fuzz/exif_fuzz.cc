// libFuzzer target for the JPEG marker walk and EXIF/TIFF reader: any bytes in, orientation 1..8 out,
// no read outside the buffer (ASan checks that; the input is copied to an exact-size heap block).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "libcache/source/exif.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size > 0) std::memcpy(copy.get(), data, size);
  const uint8_t* d = copy.get();

  const yc::JpegMarkers m = yc::ScanJpegMarkers(d, size);
  if (m.orientation < 1 || m.orientation > 8) std::abort();
  if (m.reached_sos && (m.sos_offset + 1 >= size || d[m.sos_offset] != 0xFF || d[m.sos_offset + 1] != 0xDA)) {
    std::abort();
  }
  if (m.reached_sos) (void)yc::JpegHasEoiAfter(d, size, m.sos_offset);

  // The same bytes as a bare TIFF block (e.g. a .tif header or an EXIF body).
  uint32_t value = 0;
  (void)yc::ReadTiffIfd0Tag(d, size, 0x0112, &value);
  (void)yc::ReadTiffIfd0Tag(d, size, 0x0100, &value);

  // And wrapped as a JPEG with the input as its APP1 Exif body, so the TIFF reader sees it via the walk.
  const size_t body = size < 65000 ? size : 65000;
  std::unique_ptr<uint8_t[]> jpeg(new uint8_t[body + 12]);
  const size_t len = body + 8;
  const uint8_t head[] = {0xFF, 0xD8, 0xFF, 0xE1, static_cast<uint8_t>(len >> 8), static_cast<uint8_t>(len & 0xFF),
                          'E', 'x', 'i', 'f', 0, 0};
  std::memcpy(jpeg.get(), head, sizeof head);
  if (body > 0) std::memcpy(jpeg.get() + sizeof head, d, body);
  const int o = yc::JpegExifOrientation(jpeg.get(), body + sizeof head);
  if (o < 1 || o > 8) std::abort();
  return 0;
}
