// Fixed-width little-endian encoding for the on-disk formats (docs/FORMAT.md), in the style of
// LevelDB's util/coding.h. Every cache file is little-endian; the build refuses big-endian hosts
// rather than carrying byte-swapping code nobody runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace yc {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "yolocache cache files are little-endian");

inline void EncodeFixed16(uint8_t* dst, uint16_t v) { std::memcpy(dst, &v, sizeof(v)); }
inline void EncodeFixed32(uint8_t* dst, uint32_t v) { std::memcpy(dst, &v, sizeof(v)); }
inline void EncodeFixed64(uint8_t* dst, uint64_t v) { std::memcpy(dst, &v, sizeof(v)); }

inline uint16_t DecodeFixed16(const uint8_t* src) {
  uint16_t v;
  std::memcpy(&v, src, sizeof(v));
  return v;
}
inline uint32_t DecodeFixed32(const uint8_t* src) {
  uint32_t v;
  std::memcpy(&v, src, sizeof(v));
  return v;
}
inline uint64_t DecodeFixed64(const uint8_t* src) {
  uint64_t v;
  std::memcpy(&v, src, sizeof(v));
  return v;
}

// LMDB keys: big-endian so that LMDB's default memcmp order is the numeric order (MDB_APPEND).
inline void EncodeBigEndian64(uint8_t* dst, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    dst[i] = static_cast<uint8_t>(v & 0xff);
    v >>= 8;
  }
}
inline uint64_t DecodeBigEndian64(const uint8_t* src) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | src[i];
  return v;
}

// Rounds v up to a multiple of a power-of-two alignment. Callers keep v far below 2^63.
constexpr uint64_t AlignUp(uint64_t v, uint64_t alignment) { return (v + alignment - 1) & ~(alignment - 1); }

// XXH3 checksums are written as 16 lowercase hex digits in JSON and messages.
std::string ChecksumToHex(uint64_t v);
// Accepts exactly 16 hex digits (either case).
bool ChecksumFromHex(const std::string& hex, uint64_t* out);

}  // namespace yc
