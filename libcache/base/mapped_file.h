// A whole file mapped read-only (MAP_SHARED) so that every process reading a cache shares one copy
// in the page cache, plus the streaming file hash used by the manifest and by verify.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "base/status.h"
#include "libcache/base/file_read.h"

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
  // Hints that [offset, offset + length) will be read soon; out-of-range is ignored (WillNeedPages).
  void WillNeed(uint64_t offset, uint64_t length) const;
  // Evicts the file's pages from the page cache (DropPages).
  Status DropCachedPages() const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size, ScopedFd fd)
      : path_(std::move(path)), data_(data), size_(size), fd_(std::move(fd)) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
  ScopedFd fd_;  // kept open for posix_fadvise (one per shard: a few hundred for a terabyte)
};

// Page-cache control over a read-only MAP_SHARED mapping `map` of a file's first `size` bytes, `fd`
// open on the same file; shared by the shard and LMDB readers (LMDB owns its own map and fd).
// WillNeedPages: asks the kernel to start reading [offset, offset + length) and returns at once
// (MADV_WILLNEED). Clamped to the file; nothing happens out of range. A hint: what the mapping reads
// is unchanged.
void WillNeedPages(const uint8_t* map, size_t size, uint64_t offset, uint64_t length);
// DropPages: unmaps our own page-table entries (MADV_DONTNEED: the file's pages stay in the cache,
// the mapping stays valid and faults them back in on the next touch), then evicts the clean pages of
// the file (POSIX_FADV_DONTNEED), which skips any page still mapped somewhere, so without the first
// step pages this process had touched would survive. Pages mapped by other processes stay. Readers
// may keep reading concurrently: they only fault again.
Status DropPages(const uint8_t* map, size_t size, int fd, const std::string& path);

// XXH3_64 over a file's bytes, read with pread in large blocks (no mmap: works on files that are
// being checked for truncation without any SIGBUS risk). Also returns the size it hashed.
Status HashFile(const std::filesystem::path& path, uint64_t* hash, uint64_t* size);

// fsync of a file or directory by path.
Status SyncPath(const std::filesystem::path& path);

}  // namespace yc
