#include "libcache/source/image_format.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>


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

// The bit depths the PNG specification allows per colour type (libpng refuses the others).
bool PngDepthValid(int depth, int colour) {
  switch (colour) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;  // grey
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8;                 // palette
    case 2: case 4: case 6: return depth == 8 || depth == 16;                            // RGB, GA, RGBA
    default: return false;
  }
}

// OpenCV's PNG decoder output: grey stays one channel; RGB and palette become 3 channels, 4 with a
// tRNS chunk; grey+alpha and RGBA become 4; 16-bit samples stay 16-bit.
int64_t PngBytesPerPixel(int depth, int colour, bool trns) {
  int channels = 4;
  if (colour == 0) channels = 1;
  else if (colour == 2 || colour == 3) channels = trns ? 4 : 3;
  return channels * (depth == 16 ? 2 : 1);
}

// PNG: signature, then chunks (length, type, data, CRC) up to IEND. Walking the chunk headers is
// enough to tell a cut file (a chunk runs past the end, or no IEND) from a damaged one (a chunk type
// that is not four ASCII letters). Data after IEND is ignored, as libpng does.
void ProbePng(const uint8_t* d, size_t n, ImageProbe* out) {
  size_t p = 8;
  bool first = true;
  int depth = 0, colour = 0;
  bool trns = false;
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
      depth = d[p + 16];
      colour = d[p + 17];
      if (!PngDepthValid(depth, colour)) {
        out->issue = Corrupt("PNG IHDR bit depth " + std::to_string(depth) + " is invalid for colour type " +
                             std::to_string(colour));
        return;
      }
      first = false;
    }
    if (name == "tRNS") trns = true;
    if (n - p - 8 < uint64_t{len} + 4) {
      out->issue = Truncated("PNG data ends inside the " + name + " chunk (byte " + std::to_string(n) + " of " +
                             std::to_string(p + 12 + uint64_t{len}) + ")");
      return;
    }
    if (name == "IEND") {
      out->bytes_per_pixel = PngBytesPerPixel(depth, colour, trns);
      return;
    }
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
  out->bytes_per_pixel = bpp == 32 ? 4 : 3;  // OpenCV: BGR, BGRA for 32-bit with alpha
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
  out->bytes_per_pixel = 4;  // BGRA when the image has alpha (VP8L, VP8X), else BGR
  if (std::memcmp(d + 12, "VP8 ", 4) == 0) {
    out->width = Le16(d + 26) & 0x3FFF;
    out->height = Le16(d + 28) & 0x3FFF;
    out->bytes_per_pixel = 3;
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

// TIFF and BigTIFF: the first IFD's size and sample tags, bounds-checked, in the byte order the header
// names. Only what decides the decoder's allocation is read; libtiff checks the rest.
class TiffReader {
 public:
  TiffReader(const uint8_t* d, size_t n) : d_(d), n_(n), little_(n >= 2 && d[0] == 'I') {}
  size_t size() const { return n_; }
  bool Fits(uint64_t off, uint64_t len) const { return off <= n_ && len <= n_ - off; }
  uint64_t Read(uint64_t off, int bytes) const {  // caller checked Fits(off, bytes)
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      const uint64_t b = d_[off + static_cast<uint64_t>(little_ ? bytes - 1 - i : i)];
      v = v << 8 | b;
    }
    return v;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  bool little_;
};

// Bytes per value of the integer types libtiff reads sizes from (TIFFReadDirEntryLong/Long8); 0 for
// every other type (ASCII, RATIONAL, FLOAT, DOUBLE, UNDEFINED, unknown).
int TiffIntegerSize(uint16_t type, bool* is_signed) {
  *is_signed = type == 6 || type == 8 || type == 9 || type == 17;
  switch (type) {
    case 1: case 6: return 1;            // BYTE, SBYTE
    case 3: case 8: return 2;            // SHORT, SSHORT
    case 4: case 9: case 13: return 4;   // LONG, SLONG, IFD
    case 16: case 17: case 18: return 8; // LONG8, SLONG8, IFD8
    default: return 0;
  }
}

const char* TiffTagName(uint16_t tag) {
  switch (tag) {
    case 256: return "ImageWidth";
    case 257: return "ImageLength";
    case 258: return "BitsPerSample";
    case 262: return "PhotometricInterpretation";
    default: return "SamplesPerPixel";
  }
}

struct TiffFields {
  uint64_t width = 0, height = 0, bits = 1, samples = 1, photometric = 1;
  bool has_width = false, has_height = false;
};

// Reads the first value of one IFD entry as an unsigned integer. The value sits in the entry when it
// fits (4 bytes, 8 in BigTIFF), else at the offset the entry holds.
std::optional<Issue> ReadTiffValue(const TiffReader& t, uint64_t entry, bool big, uint16_t tag, uint64_t* value) {
  const uint16_t type = static_cast<uint16_t>(t.Read(entry + 2, 2));
  const uint64_t count = big ? t.Read(entry + 4, 8) : t.Read(entry + 4, 4);
  const uint64_t field = entry + (big ? 12 : 8);
  const int field_size = big ? 8 : 4;
  bool is_signed = false;
  const int size = TiffIntegerSize(type, &is_signed);
  const std::string name = TiffTagName(tag);
  if (size == 0 || (size == 8 && !big)) {
    return Corrupt("TIFF " + name + " has field type " + std::to_string(type) + ", not an integer type");
  }
  if (count == 0) return Corrupt("TIFF " + name + " has no value");
  uint64_t at = field;
  if (count > static_cast<uint64_t>(field_size / size)) at = t.Read(field, field_size);  // stored elsewhere
  if (!t.Fits(at, static_cast<uint64_t>(size))) {
    return Truncated("TIFF data ends at byte " + std::to_string(t.size()) + " before the " + name + " value");
  }
  uint64_t v = t.Read(at, size);
  if (is_signed && size < 8 && (v >> (8 * size - 1)) != 0) v |= ~uint64_t{0} << (8 * size);  // sign-extend
  if (is_signed && static_cast<int64_t>(v) < 0) {
    return Corrupt("TIFF " + name + " is negative (" + std::to_string(static_cast<int64_t>(v)) + ")");
  }
  *value = v;
  return std::nullopt;
}

std::optional<Issue> ReadTiffFields(const uint8_t* d, size_t n, TiffFields* f) {
  const TiffReader t(d, n);
  const bool big = d[2] == 0x2B || d[3] == 0x2B;  // "II+\0" / "MM\0+"
  uint64_t ifd = 0;
  if (big) {
    if (!t.Fits(0, 16)) return Truncated("BigTIFF data ends inside the header (" + std::to_string(n) + " bytes)");
    if (t.Read(4, 2) != 8 || t.Read(6, 2) != 0) return Corrupt("BigTIFF header has an invalid offset size");
    ifd = t.Read(8, 8);
  } else {
    if (!t.Fits(0, 8)) return Truncated("TIFF data ends inside the header (" + std::to_string(n) + " bytes)");
    ifd = t.Read(4, 4);
  }
  const int count_size = big ? 8 : 2, entry_size = big ? 20 : 12;
  if (!t.Fits(ifd, static_cast<uint64_t>(count_size))) {
    return Truncated("TIFF data ends at byte " + std::to_string(n) + " before IFD0 at byte " + std::to_string(ifd));
  }
  const uint64_t entries = t.Read(ifd, count_size);
  if (entries == 0 || entries > 4096) {  // libtiff's own sanity bound on a directory
    return Corrupt("TIFF IFD0 has " + std::to_string(entries) + " entries");
  }
  if (!t.Fits(ifd + static_cast<uint64_t>(count_size), entries * static_cast<uint64_t>(entry_size))) {
    return Truncated("TIFF data ends at byte " + std::to_string(n) + " inside IFD0");
  }
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t entry = ifd + static_cast<uint64_t>(count_size) + i * static_cast<uint64_t>(entry_size);
    const uint16_t tag = static_cast<uint16_t>(t.Read(entry, 2));
    if (tag != 256 && tag != 257 && tag != 258 && tag != 262 && tag != 277) continue;
    uint64_t v = 0;
    if (std::optional<Issue> bad = ReadTiffValue(t, entry, big, tag, &v)) return bad;
    switch (tag) {  // a repeated tag counts with its largest value: the bound must hold for either
      case 256: f->width = f->has_width ? std::max(f->width, v) : v; f->has_width = true; break;
      case 257: f->height = f->has_height ? std::max(f->height, v) : v; f->has_height = true; break;
      case 258: f->bits = std::max<uint64_t>(v, 1); break;
      case 262: f->photometric = v; break;
      default: f->samples = std::max<uint64_t>(v, 1); break;
    }
  }
  return std::nullopt;
}

void ProbeTiff(const uint8_t* d, size_t n, ImageProbe* out) {
  TiffFields f;
  if (std::optional<Issue> bad = ReadTiffFields(d, n, &f)) {
    out->issue = std::move(bad);
    return;
  }
  if (!f.has_width || !f.has_height) {
    out->issue = Corrupt(std::string("TIFF IFD0 has no ") + (f.has_width ? "ImageLength" : "ImageWidth") + " tag");
    return;
  }
  constexpr uint64_t kMaxSide = uint64_t{1} << 62;  // keeps width x height computable without overflow
  out->width = static_cast<int64_t>(std::min(f.width, kMaxSide));
  out->height = static_cast<int64_t>(std::min(f.height, kMaxSide));
  if (f.width == 0 || f.height == 0) {
    out->issue = Corrupt("TIFF declares an invalid size " + std::to_string(f.width) + "x" + std::to_string(f.height));
    return;
  }
  if (f.bits > 64 || f.samples > 65535) {
    out->issue = Corrupt("TIFF BitsPerSample " + std::to_string(f.bits) + " / SamplesPerPixel " +
                         std::to_string(f.samples) + " is invalid");
    return;
  }
  const int64_t sample_bytes = f.bits <= 8 ? 1 : f.bits <= 16 ? 2 : f.bits <= 32 ? 4 : 8;
  // Single-sample grey stays one channel; anything else may come out as BGRA (palette, RGB, YCbCr,
  // CMYK and libtiff's RGBA fallback).
  const int64_t channels = f.samples == 1 && f.photometric <= 1 ? 1 : std::max<int64_t>(4, static_cast<int64_t>(f.samples));
  out->bytes_per_pixel = channels * sample_bytes;
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
    case ImageFormat::kTiff: ProbeTiff(data, size, &out); break;
    default: break;
  }
  return out;
}


int64_t JpegCoefficientBytesPerPixel(const uint8_t* d, size_t n) {
  if (d == nullptr || n < 4 || d[0] != 0xFF || d[1] != 0xD8) return 0;
  bool progressive = false;
  int components = 0;
  int64_t sampling_sum = 0, hmax = 1, vmax = 1;  // sum of Hi x Vi, largest Hi and Vi
  size_t p = 2;
  while (true) {
    while (p < n && d[p] != 0xFF) ++p;  // junk before a marker, as libjpeg skips it
    while (p < n && d[p] == 0xFF) ++p;
    if (p + 3 > n) return 0;
    const uint8_t marker = d[p++];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
    if (marker == 0xD9) return 0;
    const size_t len = size_t{d[p]} << 8 | d[p + 1];
    if (len < 2 || len > n - p) return 0;
    const uint8_t* seg = d + p + 2;
    const size_t seg_len = len - 2;
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof && components == 0 && seg_len >= 6) {
      progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
      components = seg[5];
      if (components == 0 || seg_len < 6 + 3 * size_t(components)) return 0;
      for (int c = 0; c < components; ++c) {
        const int64_t h = std::max(seg[7 + 3 * c] >> 4, 1), v = std::max(seg[7 + 3 * c] & 15, 1);
        sampling_sum += h * v;
        hmax = std::max(hmax, h);
        vmax = std::max(vmax, v);
      }
    }
    if (marker == 0xDA) {
      if (components == 0 || seg_len < 1) return 0;
      if (!progressive && seg[0] >= components) return 0;  // one interleaved pass
      return (2 * sampling_sum + hmax * vmax - 1) / (hmax * vmax);
    }
    p += len;
  }
}

}  // namespace yc
