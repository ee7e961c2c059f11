// Small synthetic images for the ingest tests: JPEGs made with TurboJPEG, EXIF APP1 segments built by
// hand, and a reference EXIF orientation written straight from the TIFF/EXIF definition.
#pragma once

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "tests/sanitizer.h"

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


// A PNG of zeros whose IDAT is one real fixed-Huffman deflate block of <length 258, distance 1>
// matches: 13 bits per 258 bytes, so a 16384x16384 16-bit RGBA image (2 GiB decoded) is 13 MB, built in
// well under a second (a zlib encoder would take tens of seconds for the 2 GiB).
inline std::string MakeZeroPng(uint32_t w, uint32_t h, int bit_depth, int color_type) {
  const int channels = color_type == 6 ? 4 : color_type == 2 ? 3 : color_type == 4 ? 2 : 1;
  const uint64_t row = 1 + (uint64_t{w} * static_cast<uint64_t>(channels * bit_depth) + 7) / 8;
  const uint64_t total = row * h;  // filter byte 0 + zero samples: every raw byte is 0
  std::string z = "\x78\x01";
  uint64_t acc = 0;
  int nacc = 0;
  auto put = [&](uint64_t bits, int n) {  // LSB first, as deflate packs everything but Huffman codes
    acc |= bits << nacc;
    nacc += n;
    while (nacc >= 8) {
      z += static_cast<char>(acc & 0xFF);
      acc >>= 8;
      nacc -= 8;
    }
  };
  auto reversed = [](uint32_t code, int n) {  // Huffman codes go most significant bit first
    uint32_t r = 0;
    for (int i = 0; i < n; ++i) r |= ((code >> i) & 1u) << (n - 1 - i);
    return r;
  };
  put(1, 1);                      // BFINAL
  put(1, 2);                      // BTYPE 01: fixed Huffman
  const uint32_t lit0 = reversed(0x30, 8);
  put(lit0, 8);                   // literal 0
  const uint64_t matches = (total - 1) / 258, rest = (total - 1) % 258;
  const uint64_t pair = reversed(0xC5, 8);  // length 258 (symbol 285), then distance code 0 (5 zero bits)
  for (uint64_t i = 0; i < matches; ++i) put(pair, 13);
  for (uint64_t i = 0; i < rest; ++i) put(lit0, 8);
  put(0, 7);                      // end of block (symbol 256)
  if (nacc > 0) put(0, 8 - nacc);
  const uint32_t adler = static_cast<uint32_t>(total % 65521) << 16 | 1u;  // s1 = 1, s2 = total
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  z += be32(adler);
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
      t[i] = c;
    }
    return t;
  }();
  auto chunk = [&](const std::string& type, const std::string& data) {
    uint32_t c = 0xFFFFFFFFu;
    for (char ch : type + data) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
    return be32(static_cast<uint32_t>(data.size())) + type + data + be32(c ^ 0xFFFFFFFFu);
  };
  std::string ihdr = be32(w) + be32(h);
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(color_type);
  ihdr += std::string(3, '\0');
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

// One TIFF IFD entry: tag, field type, count and the value (inline, or the offset of the values).
struct TiffEntry {
  uint16_t tag, type;
  uint64_t count, value;
};

// A little-endian TIFF (or BigTIFF) whose IFD0 holds `entries` (in the order given), followed by
// `tail` bytes (strip data or out-of-line values, at offset TiffTailOffset()).
inline size_t TiffTailOffset(bool big, size_t entries) {
  return big ? 16 + 8 + entries * 20 + 8 : 8 + 2 + entries * 12 + 4;
}
inline std::string MakeTiff(bool big, const std::vector<TiffEntry>& entries, const std::string& tail = "") {
  std::string t;
  auto le = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) t += static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  if (big) {
    t += "II";
    le(43, 2);
    le(8, 2);
    le(0, 2);
    le(16, 8);
    le(entries.size(), 8);
  } else {
    t += "II";
    le(42, 2);
    le(8, 4);
    le(entries.size(), 2);
  }
  for (const TiffEntry& e : entries) {
    le(e.tag, 2);
    le(e.type, 2);
    le(e.count, big ? 8 : 4);
    le(e.value, big ? 8 : 4);
  }
  le(0, big ? 8 : 4);  // no next IFD
  return t + tail;
}


// The JPEG with its baseline SOF0 size rewritten to w x h (the scan data stays that of the small image):
// a header that makes the decoder allocate for w x h before it reads any scan.
inline std::string WithSofSize(std::string jpeg, int w, int h) {
  const size_t sof = jpeg.find("\xFF\xC0");
  if (sof == std::string::npos) throw std::runtime_error("no SOF0");
  jpeg[sof + 5] = static_cast<char>(h >> 8);
  jpeg[sof + 6] = static_cast<char>(h & 0xFF);
  jpeg[sof + 7] = static_cast<char>(w >> 8);
  jpeg[sof + 8] = static_cast<char>(w & 0xFF);
  return jpeg;
}

// Runs `body` in a forked child whose address space may grow by `extra` bytes only (RLIMIT_AS at its
// current size + extra) and returns what body returned, or "child died: ..." . Under ASan (which
// reserves terabytes of address space up front) body runs in this process without a cap.
inline std::string UnderMemoryCap(uint64_t extra, const std::function<std::string()>& body) {
  if (kSanitizedBuild) return body();
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    // What earlier tests freed stays mapped in the heap, and glibc's dynamic mmap threshold (up to
    // 32 MiB) would serve a large allocation from it: give it back and keep large blocks on mmap, so
    // `extra` is what body may really allocate, whichever tests ran before in this process.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    malloc_trim(0);
    uint64_t vm_kb = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(line.substr(7));
    }
    const rlimit cap{vm_kb * 1024 + extra, vm_kb * 1024 + extra};
    std::string out = setrlimit(RLIMIT_AS, &cap) == 0 ? body() : "setrlimit failed";
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died: status " + std::to_string(status) + " after: " + out;
  return out;
}

}  // namespace yc::testing
