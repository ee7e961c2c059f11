// Small synthetic images for the ingest tests: JPEGs made with TurboJPEG, EXIF APP1 segments built by
// hand, and a reference EXIF orientation written straight from the TIFF/EXIF definition.
#pragma once

#include <turbojpeg.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace yc::testing {

// RGB uint8 image -> JPEG bytes (JFIF, no EXIF).
inline std::string MakeJpeg(const cv::Mat& rgb, int quality = 95, int subsamp = TJSAMP_444) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int pf = rgb.channels() == 1 ? TJPF_GRAY : TJPF_RGB;
  const int rc = tjCompress2(tj, rgb.data, rgb.cols, static_cast<int>(rgb.step[0]), rgb.rows, pf, &buf, &size,
                             rgb.channels() == 1 ? TJSAMP_GRAY : subsamp, quality, 0);
  std::string out;
  if (rc == 0) out.assign(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed");
  return out;
}

// "Exif\0\0" + a TIFF block whose IFD0 holds one entry: Orientation (SHORT) = value.
inline std::string ExifPayload(int orientation, bool little_endian) {
  std::string t;
  auto u16 = [&](uint16_t v) {
    if (little_endian) {
      t += static_cast<char>(v & 0xFF);
      t += static_cast<char>(v >> 8);
    } else {
      t += static_cast<char>(v >> 8);
      t += static_cast<char>(v & 0xFF);
    }
  };
  auto u32 = [&](uint32_t v) {
    if (little_endian) {
      u16(static_cast<uint16_t>(v & 0xFFFF));
      u16(static_cast<uint16_t>(v >> 16));
    } else {
      u16(static_cast<uint16_t>(v >> 16));
      u16(static_cast<uint16_t>(v & 0xFFFF));
    }
  };
  t += little_endian ? "II" : "MM";
  u16(42);
  u32(8);       // IFD0 right after the header
  u16(2);       // two entries: a harmless one first, then Orientation
  u16(0x010F);  // Make, ASCII, 4 bytes inline
  u16(2);
  u32(4);
  t += std::string("abc\0", 4);
  u16(0x0112);  // Orientation, SHORT, 1 value
  u16(3);
  u32(1);
  u16(static_cast<uint16_t>(orientation));
  u16(0);
  u32(0);  // no next IFD
  return std::string("Exif\0\0", 6) + t;
}

// Inserts an APPn segment with `payload` right after SOI.
inline std::string InsertSegment(const std::string& jpeg, uint8_t marker, const std::string& payload) {
  const size_t len = payload.size() + 2;
  std::string seg;
  seg += '\xFF';
  seg += static_cast<char>(marker);
  seg += static_cast<char>(len >> 8);
  seg += static_cast<char>(len & 0xFF);
  seg += payload;
  return jpeg.substr(0, 2) + seg + jpeg.substr(2);
}

inline std::string WithOrientation(const std::string& jpeg, int orientation, bool little_endian = false) {
  return InsertSegment(jpeg, 0xE1, ExifPayload(orientation, little_endian));
}

// EXIF orientation written from its definition (where stored pixel (sx, sy) is displayed).
inline cv::Mat ReferenceOrient(const cv::Mat& s, int orientation) {
  const int W = s.cols, H = s.rows;
  const bool swap = orientation >= 5;
  cv::Mat d(swap ? W : H, swap ? H : W, s.type());
  for (int y = 0; y < d.rows; ++y) {
    for (int x = 0; x < d.cols; ++x) {
      int sx = x, sy = y;
      switch (orientation) {
        case 2: sx = W - 1 - x; break;
        case 3: sx = W - 1 - x; sy = H - 1 - y; break;
        case 4: sy = H - 1 - y; break;
        case 5: sx = y; sy = x; break;
        case 6: sx = y; sy = H - 1 - x; break;
        case 7: sx = W - 1 - y; sy = H - 1 - x; break;
        case 8: sx = W - 1 - y; sy = x; break;
        default: break;
      }
      d.at<cv::Vec3b>(y, x) = s.at<cv::Vec3b>(sy, sx);
    }
  }
  return d;
}

// W x H image of 8x8-aligned flat colour blocks: JPEG keeps block interiors almost exact.
inline cv::Mat Blocks(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int bx = x / 8, by = y / 8;
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uint8_t>(40 + 50 * (bx % 4)), static_cast<uint8_t>(30 + 60 * (by % 4)),
                                        static_cast<uint8_t>((bx * 7 + by * 13) % 2 ? 220 : 20));
    }
  }
  return m;
}

inline double MaxAbsDiff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return 1e9;
  return cv::norm(a, b, cv::NORM_INF);
}

inline const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// A valid PNG built by hand (zlib "stored" blocks, so no encoder is needed): `rows` holds the raw
// scanlines without filter bytes, big-endian samples as PNG stores them.
inline std::string MakePng(int w, int h, int bit_depth, int color_type, const std::string& rows) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  auto crc32 = [](const std::string& s) {
    uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : s) {
      c ^= b;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
  };
  auto chunk = [&](const std::string& type, const std::string& data) {
    return be32(static_cast<uint32_t>(data.size())) + type + data + be32(crc32(type + data));
  };
  const size_t stride = rows.size() / static_cast<size_t>(h);
  std::string raw;
  for (int y = 0; y < h; ++y) raw += '\0' + rows.substr(static_cast<size_t>(y) * stride, stride);
  std::string z = "\x78\x01";
  for (size_t off = 0; off < raw.size() || off == 0; off += 65535) {
    const size_t n = std::min<size_t>(65535, raw.size() - off);
    const bool last = off + n >= raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(n & 0xFF);
    z += static_cast<char>(n >> 8);
    z += static_cast<char>(~n & 0xFF);
    z += static_cast<char>((~n >> 8) & 0xFF);
    z += raw.substr(off, n);
    if (last) break;
  }
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  z += be32(b << 16 | a);
  std::string ihdr = be32(static_cast<uint32_t>(w)) + be32(static_cast<uint32_t>(h));
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(color_type);
  ihdr += std::string(3, '\0');
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

}  // namespace yc::testing
