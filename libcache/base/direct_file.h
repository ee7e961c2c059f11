// Reading a data file around the page cache (O_DIRECT), for the windowed order's stage
// (loader/io/window_stage.h): large reads straight into the caller's memory, so a cache larger than RAM
// costs the kernel no page-cache insertion, no reclaim and no page faults.
//
//   Result<std::unique_ptr<DirectFile>> f = DirectFile::Open(path);
//   uint8_t* buffer = ...;  // aligned to DirectFile::kAlignment
//   Status st = (*f)->ReadAligned(offset, length, buffer);  // offset, length multiples of kAlignment
//
// Where the file system refuses O_DIRECT (tmpfs, some network and FUSE mounts) the file is opened
// normally and the same reads go through the page cache: slower for a cache larger than RAM, never
// wrong. Thread-safe (pread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "libcache/base/file_read.h"

namespace yc {

class DirectFile {
 public:
  // Offsets, lengths and buffers of ReadAligned are multiples of this: the largest logical block
  // size O_DIRECT asks for on Linux (512 on most disks, 4096 on 4Kn ones).
  static constexpr uint64_t kAlignment = 4096;

  // `direct` false: through the page cache from the start (a file whose bytes were just written, which
  // O_DIRECT would first wait to see written back).
  static Result<std::unique_ptr<DirectFile>> Open(const std::string& path, bool direct = true);

  // Reads [offset, offset + length) into `dst` (length bytes of room). Where the range passes the end
  // of the file, the bytes after it are unspecified (O_DIRECT fills the last block with zeros). IOError
  // naming the file and the offset when the disk fails.
  Status ReadAligned(uint64_t offset, uint64_t length, uint8_t* dst) const;

  uint64_t size() const { return size_; }
  bool direct() const { return direct_; }  // false: the file system refused O_DIRECT
  const std::string& path() const { return path_; }

 private:
  DirectFile(std::string path, ScopedFd fd, uint64_t size, bool direct)
      : path_(std::move(path)), fd_(std::move(fd)), size_(size), direct_(direct) {}
  std::string path_;
  ScopedFd fd_;
  uint64_t size_;
  bool direct_;
};

// Rounds down / up to DirectFile::kAlignment.
inline uint64_t AlignDown(uint64_t x) { return x & ~(DirectFile::kAlignment - 1); }
inline uint64_t AlignUp(uint64_t x) { return AlignDown(x + DirectFile::kAlignment - 1); }

}  // namespace yc
