// The central directory of a zip file: every member's name and the CRC-32 and size its writer recorded.
// LibTorch's zip reader (PyTorchStreamReader, miniz) is built with CRC checks off, so a flipped byte in
// a member would go unnoticed; TorchArchive compares each member it reads with this (trainer/io/torch_archive.h).
//
//   Result<ZipDirectory> dir = ReadZipDirectory("last.pt");
//   const ZipMember* m = dir->Find("archive/data.pkl");
//   if (m != nullptr && Crc32(bytes, n) != m->crc32) ...  // damaged
//
// Bounded: the end record is looked for in the last 64 KiB + 22 bytes only, the directory must lie
// inside the file and hold at most one entry per 46 bytes; zip64 end records and extra fields are
// understood. A member named twice is refused (a reader could take one copy, the check the other).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "base/status.h"

namespace yc::trainer {

struct ZipMember {
  uint32_t crc32 = 0;
  uint64_t size = 0;  // uncompressed
};

class ZipDirectory {
 public:
  // The member of that full name ("archive/data.pkl"), or nullptr. Names compare ASCII case-insensitively,
  // as miniz's lookup does (so "DATA.PKL" cannot stand in for an unchecked "data.pkl").
  const ZipMember* Find(const std::string& name) const;
  // Full names (as lowercased for lookup), in name order.
  const std::map<std::string, ZipMember>& members() const { return members_; }
  // The folder the first member is in ("archive"): PyTorchStreamReader prefixes every lookup with it.
  const std::string& root() const { return root_; }

 private:
  friend Result<ZipDirectory> ReadZipDirectory(const std::filesystem::path& path);
  std::map<std::string, ZipMember> members_;
  std::string root_;
};

// IOError naming the file when it has no (or a damaged) central directory.
Result<ZipDirectory> ReadZipDirectory(const std::filesystem::path& path);

// zlib's CRC-32 (the one zip uses) of `n` bytes.
uint32_t Crc32(const void* data, size_t n);

}  // namespace yc::trainer
