// A whole file mapped read-only (MAP_SHARED) so that every process reading a cache shares one copy
// in the page cache, plus the streaming file hash used by the manifest and by verify.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "libcache/status.h"

namespace yc {

// How the kernel should read ahead for a mapping (madvise).
enum class AccessAdvice {
  kNormal,      // default read-around: best for random access to records of ~1 MB (the loader)
  kRandom,      // MADV_RANDOM: one page per fault; only for tiny records on storage slower than RAM
  kSequential,  // MADV_SEQUENTIAL: verify and other front-to-back scans
};

class MappedFile {
 public:
  // An empty file maps to data() == nullptr, size() == 0. `willneed` asks the kernel to start
  // reading the whole file in the background (MADV_WILLNEED).
  static Result<std::unique_ptr<MappedFile>> Open(const std::filesystem::path& path,
                                                  AccessAdvice advice = AccessAdvice::kNormal,
                                                  bool willneed = false);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Hints that [offset, offset + length) will be read soon (MADV_WILLNEED); out-of-range is ignored.
  void WillNeed(uint64_t offset, uint64_t length) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size) : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

// XXH3_64 over a file's bytes, read with pread in large blocks (no mmap: works on files that are
// being checked for truncation without any SIGBUS risk). Also returns the size it hashed.
Status HashFile(const std::filesystem::path& path, uint64_t* hash, uint64_t* size);

// fsync of a file or directory by path.
Status SyncPath(const std::filesystem::path& path);

}  // namespace yc
