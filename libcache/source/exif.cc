#include "libcache/source/exif.h"

#include <cstring>

namespace yc {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTypeShort = 3;
constexpr uint16_t kTypeLong = 4;

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// Byte-order aware reads from a bounded TIFF block.
struct Tiff {
  const uint8_t* data;
  size_t size;
  bool little;

  bool U16(size_t off, uint16_t* v) const {
    if (off > size || size - off < 2) return false;
    const uint8_t* p = data + off;
    *v = little ? static_cast<uint16_t>(p[0] | p[1] << 8) : static_cast<uint16_t>(p[0] << 8 | p[1]);
    return true;
  }
  bool U32(size_t off, uint32_t* v) const {
    if (off > size || size - off < 4) return false;
    const uint8_t* p = data + off;
    *v = little ? (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24)
                : (uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]});
    return true;
  }
};

bool IsExifApp1(const uint8_t* seg, size_t len) {
  // "Exif" followed by two pad bytes (normally 00 00; some writers put 00 FF).
  return len >= 6 && std::memcmp(seg, "Exif", 4) == 0 && seg[4] == 0;
}

}  // namespace

bool ReadTiffIfd0Tag(const uint8_t* tiff, size_t size, uint16_t tag, uint32_t* value) {
  if (tiff == nullptr || size < 8) return false;
  Tiff t{tiff, size, false};
  if (tiff[0] == 'I' && tiff[1] == 'I') {
    t.little = true;
  } else if (!(tiff[0] == 'M' && tiff[1] == 'M')) {
    return false;
  }
  uint16_t magic = 0;
  uint32_t ifd = 0;
  if (!t.U16(2, &magic) || magic != 42 || !t.U32(4, &ifd)) return false;
  uint16_t count = 0;
  if (!t.U16(ifd, &count)) return false;
  // Entries that do not fit are ignored, the ones that do are still read (a truncated block keeps
  // whatever tags precede the cut).
  for (uint32_t i = 0; i < count; ++i) {
    const size_t entry = size_t{ifd} + 2 + size_t{i} * 12;
    uint16_t etag = 0, type = 0;
    uint32_t n = 0;
    if (!t.U16(entry, &etag) || !t.U16(entry + 2, &type) || !t.U32(entry + 4, &n)) return false;
    if (etag != tag) continue;
    if (n < 1) return false;
    if (type == kTypeShort) {
      uint16_t v = 0;
      if (!t.U16(entry + 8, &v)) return false;
      *value = v;
      return true;
    }
    if (type == kTypeLong) {
      return t.U32(entry + 8, value);
    }
    return false;
  }
  return false;
}

JpegMarkers ScanJpegMarkers(const uint8_t* data, size_t size) {
  JpegMarkers out;
  if (data == nullptr || size < 2 || data[0] != 0xFF || data[1] != 0xD8) return out;
  out.has_soi = true;
  bool exif_seen = false;
  size_t p = 2;
  for (;;) {
    // Like libjpeg's next_marker: skip junk up to an FF, then any FF fill bytes.
    while (p < size && data[p] != 0xFF) ++p;
    while (p < size && data[p] == 0xFF) ++p;
    if (p >= size) {
      out.ran_out = true;
      return out;
    }
    const uint8_t marker = data[p];
    const size_t marker_at = p - 1;
    ++p;
    if (marker == 0xDA) {
      out.reached_sos = true;
      out.sos_offset = marker_at;
      return out;
    }
    if (marker == 0xD9) return out;  // EOI before any scan: no image, not a truncation
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
    if (size - p < 2) {
      out.ran_out = true;
      return out;
    }
    const size_t len = Be16(data + p);
    if (len < 2) return out;  // impossible length: stop, keep what we have
    const uint8_t* seg = data + p + 2;
    const size_t avail = size - p - 2;
    const size_t seg_len = len - 2;
    if (marker == 0xE1 && !exif_seen && IsExifApp1(seg, seg_len < avail ? seg_len : avail)) {
      exif_seen = true;
      // A segment cut by the end of the file is parsed as far as it goes.
      const size_t body = (seg_len < avail ? seg_len : avail) - 6;
      uint32_t v = 0;
      if (ReadTiffIfd0Tag(seg + 6, body, kOrientationTag, &v) && v >= 1 && v <= 8) {
        out.orientation = static_cast<int>(v);
      }
    }
    if (seg_len > avail) {
      out.ran_out = true;
      return out;
    }
    p += len;
  }
}

int JpegExifOrientation(const uint8_t* data, size_t size) { return ScanJpegMarkers(data, size).orientation; }

bool JpegHasEoiAfter(const uint8_t* data, size_t size, size_t from) {
  if (data == nullptr || size < 2) return false;
  for (size_t i = from; i + 1 < size; ++i) {
    if (data[i] == 0xFF && data[i + 1] == 0xD9) return true;
  }
  return false;
}

}  // namespace yc
