#include "libcache/image_format.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "libcache/exif.h"

namespace yc {
namespace {

bool StartsWith(const uint8_t* d, size_t n, const char* magic, size_t m) {
  return n >= m && std::memcmp(d, magic, m) == 0;
}
uint32_t Be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint32_t Le24(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16; }

Issue Truncated(std::string msg) { return {ProblemCode::kTruncated, Severity::kError, std::move(msg)}; }
Issue Corrupt(std::string msg) { return {ProblemCode::kCorruptData, Severity::kError, std::move(msg)}; }

// PNG: signature, then chunks (length, type, data, CRC) up to IEND. Walking the chunk headers is
// enough to tell a cut file (a chunk runs past the end, or no IEND) from a damaged one (a chunk type
// that is not four ASCII letters). Data after IEND is ignored, as libpng does.
void ProbePng(const uint8_t* d, size_t n, ImageProbe* out) {
  size_t p = 8;
  bool first = true;
  while (true) {
    if (n - p < 8) {
      out->issue = Truncated("PNG data ends at byte " + std::to_string(n) + " before the IEND chunk");
      return;
    }
    const uint32_t len = Be32(d + p);
    const uint8_t* type = d + p + 4;
    for (int i = 0; i < 4; ++i) {
      if (!std::isalpha(type[i])) {
        out->issue = Corrupt("invalid PNG chunk type at byte " + std::to_string(p + 4));
        return;
      }
    }
    if (len > 0x7FFFFFFFu) {
      out->issue = Corrupt("PNG chunk length " + std::to_string(len) + " at byte " + std::to_string(p) + " is invalid");
      return;
    }
    const std::string name(reinterpret_cast<const char*>(type), 4);
    if (first) {
      if (name != "IHDR" || len != 13) {
        out->issue = Corrupt("PNG does not start with an IHDR chunk");
        return;
      }
      if (n - p < 8 + 13) {
        out->issue = Truncated("PNG data ends inside the IHDR chunk");
        return;
      }
      out->width = Be32(d + p + 8);
      out->height = Be32(d + p + 12);
      if (out->width == 0 || out->height == 0 || out->width > 0x7FFFFFFF || out->height > 0x7FFFFFFF) {
        out->issue = Corrupt("PNG IHDR declares an invalid size " + std::to_string(out->width) + "x" +
                             std::to_string(out->height));
        return;
      }
      first = false;
    }
    if (n - p - 8 < uint64_t{len} + 4) {
      out->issue = Truncated("PNG data ends inside the " + name + " chunk (byte " + std::to_string(n) + " of " +
                             std::to_string(p + 12 + uint64_t{len}) + ")");
      return;
    }
    if (name == "IEND") return;
    p += 12 + size_t{len};
  }
}

// BMP: file header (14 bytes) + DIB header. Uncompressed pixel data must fit in the file.
void ProbeBmp(const uint8_t* d, size_t n, ImageProbe* out) {
  if (n < 26) {
    out->issue = Truncated("BMP data ends inside the header (" + std::to_string(n) + " bytes)");
    return;
  }
  const uint32_t file_size = Le32(d + 2);
  const uint32_t offset = Le32(d + 10);
  const uint32_t dib = Le32(d + 14);
  int64_t w = 0, h = 0;
  uint32_t bpp = 0, compression = 0;
  if (dib == 12) {  // BITMAPCOREHEADER
    w = Le16(d + 18);
    h = Le16(d + 20);
    bpp = Le16(d + 24);
  } else if (dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 || dib == 124) {
    if (n < 34) {
      out->issue = Truncated("BMP data ends inside the header (" + std::to_string(n) + " bytes)");
      return;
    }
    w = static_cast<int32_t>(Le32(d + 18));
    h = static_cast<int32_t>(Le32(d + 22));
    bpp = Le16(d + 28);
    compression = Le32(d + 30);
  } else {
    out->issue = Corrupt("BMP header size " + std::to_string(dib) + " is invalid");
    return;
  }
  if (h < 0) h = -h;  // negative height: top-down rows
  out->width = w;
  out->height = h;
  if (w <= 0 || h == 0) {
    out->issue = Corrupt("BMP declares an invalid size " + std::to_string(w) + "x" + std::to_string(h));
    return;
  }
  if (bpp != 1 && bpp != 2 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) {
    out->issue = Corrupt("BMP bit depth " + std::to_string(bpp) + " is invalid");
    return;
  }
  // A header whose pixel offset lies past the size it declares for the whole file is nonsense,
  // not a cut file.
  if (offset < 14 + dib || (file_size >= 14 && offset > file_size)) {
    out->issue = Corrupt("BMP pixel data offset " + std::to_string(offset) + " is invalid");
    return;
  }
  if (offset > n) {
    out->issue = Truncated("BMP data ends at byte " + std::to_string(n) + " before the pixel data at byte " +
                           std::to_string(offset));
    return;
  }
  if (compression == 0 || compression == 3 || compression == 6) {  // BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS
    const uint64_t stride = ((static_cast<uint64_t>(w) * bpp + 31) / 32) * 4;
    const uint64_t need = uint64_t{offset} + stride * static_cast<uint64_t>(h);
    if (need > n) {
      out->issue = Truncated("BMP data ends at byte " + std::to_string(n) + ", pixel rows need " +
                             std::to_string(need) + " bytes");
    }
  }
}

// WebP: RIFF container; the size is in the VP8 / VP8L / VP8X chunk header.
void ProbeWebp(const uint8_t* d, size_t n, ImageProbe* out) {
  const uint64_t riff_end = uint64_t{Le32(d + 4)} + 8;
  if (riff_end > n) {
    out->issue = Truncated("WebP data ends at byte " + std::to_string(n) + " of " + std::to_string(riff_end));
    return;
  }
  if (n < 30) {
    out->issue = Truncated("WebP data ends inside the header");
    return;
  }
  if (std::memcmp(d + 12, "VP8 ", 4) == 0) {
    out->width = Le16(d + 26) & 0x3FFF;
    out->height = Le16(d + 28) & 0x3FFF;
  } else if (std::memcmp(d + 12, "VP8L", 4) == 0) {
    const uint32_t bits = Le32(d + 21);
    out->width = (bits & 0x3FFF) + 1;
    out->height = ((bits >> 14) & 0x3FFF) + 1;
  } else if (std::memcmp(d + 12, "VP8X", 4) == 0) {
    out->width = int64_t{Le24(d + 24)} + 1;
    out->height = int64_t{Le24(d + 27)} + 1;
  } else {
    out->issue = Corrupt("WebP has no VP8/VP8L/VP8X chunk");
  }
}

}  // namespace

const char* ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "jpeg";
    case ImageFormat::kPng: return "png";
    case ImageFormat::kBmp: return "bmp";
    case ImageFormat::kTiff: return "tiff";
    case ImageFormat::kWebp: return "webp";
    case ImageFormat::kGif: return "gif";
    case ImageFormat::kPfm: return "pfm";
    case ImageFormat::kHeif: return "heif";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

ImageFormat SniffFormat(const uint8_t* d, size_t n) {
  if (d == nullptr) return ImageFormat::kUnknown;
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return ImageFormat::kJpeg;
  if (StartsWith(d, n, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  if (StartsWith(d, n, "BM", 2) && n >= 14) return ImageFormat::kBmp;
  if (StartsWith(d, n, "II*\0", 4) || StartsWith(d, n, "MM\0*", 4) || StartsWith(d, n, "II+\0", 4) ||
      StartsWith(d, n, "MM\0+", 4)) {
    return ImageFormat::kTiff;  // classic and BigTIFF (OpenCV 4.6 reads both)
  }
  if (n >= 12 && StartsWith(d, n, "RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) return ImageFormat::kWebp;
  if (StartsWith(d, n, "GIF87a", 6) || StartsWith(d, n, "GIF89a", 6)) return ImageFormat::kGif;
  if (n >= 3 && d[0] == 'P' && (d[1] == 'F' || d[1] == 'f') && (d[2] == '\n' || d[2] == '\r' || d[2] == ' ')) {
    return ImageFormat::kPfm;
  }
  if (n >= 12 && std::memcmp(d + 4, "ftyp", 4) == 0) {
    static const char* kBrands[] = {"heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1", "avif"};
    for (const char* b : kBrands) {
      if (std::memcmp(d + 8, b, 4) == 0) return ImageFormat::kHeif;
    }
  }
  return ImageFormat::kUnknown;
}

ImageFormat FormatFromExtension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".jpg" || ext == ".jpeg" || ext == ".mpo") return ImageFormat::kJpeg;
  if (ext == ".png") return ImageFormat::kPng;
  if (ext == ".bmp") return ImageFormat::kBmp;
  if (ext == ".tif" || ext == ".tiff" || ext == ".dng") return ImageFormat::kTiff;
  if (ext == ".webp") return ImageFormat::kWebp;
  if (ext == ".gif") return ImageFormat::kGif;
  if (ext == ".pfm") return ImageFormat::kPfm;
  if (ext == ".heic" || ext == ".heif") return ImageFormat::kHeif;
  return ImageFormat::kUnknown;
}

bool ExtensionMismatch(ImageFormat content, const std::filesystem::path& path) {
  if (content == ImageFormat::kUnknown) return false;
  return FormatFromExtension(path) != content;
}

ImageProbe ProbeImage(const uint8_t* data, size_t size) {
  ImageProbe out;
  out.format = SniffFormat(data, size);
  switch (out.format) {
    case ImageFormat::kPng: ProbePng(data, size, &out); break;
    case ImageFormat::kBmp: ProbeBmp(data, size, &out); break;
    case ImageFormat::kWebp: ProbeWebp(data, size, &out); break;
    case ImageFormat::kGif:
      if (size >= 10) {
        out.width = Le16(data + 6);
        out.height = Le16(data + 8);
      }
      break;
    case ImageFormat::kTiff: {
      uint32_t w = 0, h = 0;
      if (ReadTiffIfd0Tag(data, size, 256, &w) && ReadTiffIfd0Tag(data, size, 257, &h)) {
        out.width = w;
        out.height = h;
      }
      break;
    }
    default: break;
  }
  return out;
}

}  // namespace yc
