#include "trainer/io/zip_directory.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string_view>

#include "base/ascii.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kEntrySignature = 0x02014b50;
constexpr size_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kEntrySize = 46;
constexpr uint64_t kMaxDirectoryBytes = uint64_t{1} << 30;  // ~10 million members

uint64_t LE(std::string_view b, size_t at, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

bool ReadAt(std::ifstream& in, uint64_t offset, uint64_t n, std::string* out) {
  out->assign(n, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(out->data(), static_cast<std::streamsize>(n)));
}

}  // namespace

const ZipMember* ZipDirectory::Find(const std::string& name) const {
  auto it = members_.find(AsciiLower(name));
  return it == members_.end() ? nullptr : &it->second;
}

uint32_t Crc32(const void* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib's length is a uInt
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, std::numeric_limits<uInt>::max()));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

Result<ZipDirectory> ReadZipDirectory(const fs::path& path) {
  auto bad = [&](const std::string& why) { return Status::IOError(path.string() + ": zip central directory: " + why); };
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return Status::IOError(path.string() + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path.string() + ": cannot open");
  if (size < kEndSize) return bad("file too short");

  // End of central directory: the last signature whose comment fits in the file.
  const uint64_t tail_len = std::min<uint64_t>(size, 0xffff + kEndSize);
  std::string tail;
  if (!ReadAt(in, size - tail_len, tail_len, &tail)) return bad("cannot read the end of the file");
  size_t end = std::string::npos;
  for (size_t i = tail_len - kEndSize + 1; i-- > 0;) {
    if (LE(tail, i, 4) == kEndSignature && i + kEndSize + LE(tail, i + 20, 2) <= tail_len) {
      end = i;
      break;
    }
  }
  if (end == std::string::npos) return bad("no end record (truncated?)");
  uint64_t entries = LE(tail, end + 10, 2), dir_size = LE(tail, end + 12, 4), dir_offset = LE(tail, end + 16, 4);
  if (entries == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {  // zip64
    const uint64_t end_pos = size - tail_len + end;
    std::string rec;
    if (end_pos < kLocatorSize || !ReadAt(in, end_pos - kLocatorSize, kLocatorSize, &rec) ||
        LE(rec, 0, 4) != kZip64LocatorSignature) {
      return bad("zip64 end locator missing");
    }
    const uint64_t z64 = LE(rec, 8, 8);
    if (z64 > size - kZip64EndSize || !ReadAt(in, z64, kZip64EndSize, &rec) || LE(rec, 0, 4) != kZip64EndSignature) {
      return bad("zip64 end record missing");
    }
    entries = LE(rec, 32, 8);
    dir_size = LE(rec, 40, 8);
    dir_offset = LE(rec, 48, 8);
  }
  if (dir_offset > size || dir_size > size - dir_offset) return bad("runs past the end of the file");
  if (dir_size > kMaxDirectoryBytes || entries > dir_size / kEntrySize) return bad("implausible size or entry count");
  std::string dir;
  if (!ReadAt(in, dir_offset, dir_size, &dir)) return bad("cannot read it");

  ZipDirectory out;
  size_t p = 0;
  for (uint64_t k = 0; k < entries; ++k) {
    if (dir.size() - p < kEntrySize || LE(dir, p, 4) != kEntrySignature) return bad("entry " + std::to_string(k) + " is damaged");
    ZipMember m;
    m.crc32 = static_cast<uint32_t>(LE(dir, p + 16, 4));
    m.size = LE(dir, p + 24, 4);
    const size_t name_len = LE(dir, p + 28, 2), extra_len = LE(dir, p + 30, 2), comment_len = LE(dir, p + 32, 2);
    if (dir.size() - p - kEntrySize < name_len + extra_len + comment_len) return bad("entry " + std::to_string(k) + " is damaged");
    std::string name = dir.substr(p + kEntrySize, name_len);
    if (m.size == 0xffffffff) {  // the real size is the first field of the zip64 extra block
      std::string_view extra(dir.data() + p + kEntrySize + name_len, extra_len);
      bool found = false;
      for (size_t x = 0; x + 4 <= extra.size();) {
        const uint64_t id = LE(extra, x, 2), len = LE(extra, x + 2, 2);
        if (x + 4 + len > extra.size()) break;
        if (id == 1 && len >= 8) {
          m.size = LE(extra, x + 4, 8);
          found = true;
          break;
        }
        x += 4 + len;
      }
      if (!found) return bad(name + ": zip64 size missing");
    }
    if (k == 0) out.root_ = name.substr(0, name.find('/'));
    if (!out.members_.emplace(AsciiLower(name), m).second) return bad("member " + name + " appears twice");
    p += kEntrySize + name_len + extra_len + comment_len;
  }
  return out;
}

}  // namespace yc::trainer
