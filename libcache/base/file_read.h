// Reading files a user or a damaged cache points us at, without ever blocking or reading without end:
//
//   yc::Result<yc::ScopedFd> fd = yc::OpenRegularFile(path);       // refuses FIFOs, devices, dirs
//   std::string text;
//   yc::Status st = yc::ReadRegularFile(path, yc::kMaxMetadataBytes, &text);  // bounded whole read
//
// open(2) of a FIFO blocks until a writer appears, and reading a link to /dev/zero never ends, so every
// path is opened with O_NONBLOCK and checked with fstat on the descriptor itself (no check-then-open
// race) before a byte is read; the flag is cleared again for regular files, where it means nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc {

// Size bounds for files that are read whole. Metadata (manifest.json, audit.json, data YAMLs, list
// files) is small by nature; a bigger file is damaged or hostile and is refused before it is read.
inline constexpr uint64_t kMaxMetadataBytes = uint64_t{1} << 30;  // 1 GiB: a manifest of ~5M sources
inline constexpr uint64_t kMaxImageFileBytes = (uint64_t{1} << 31) - 1;  // decoders take int sizes
inline constexpr uint64_t kMaxLabelFileBytes = uint64_t{64} << 20;  // 64 MiB: ~1.5M label rows

// An owned file descriptor, closed on destruction.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd();

  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Opens `path` read-only if it is a regular file (symbolic links are followed). NotFound when it does
// not exist; DataError "<path>: not a regular file (a FIFO)" and the like, without blocking, when it
// is something else (the input is wrong, not the disk: `verify` exits 1 for it); IOError when it
// cannot be opened. `size` (optional) receives the file's size.
Result<ScopedFd> OpenRegularFile(const std::filesystem::path& path, uint64_t* size = nullptr);

// Reads the whole regular file into *out. A file larger than `max_bytes` is refused before reading
// (IOError naming the size and the bound), and so is one that grows past the bound while being read.
// The buffer is reused: its capacity is kept, so a per-thread buffer does not allocate per file.
Status ReadRegularFile(const std::filesystem::path& path, uint64_t max_bytes, std::string* out);
Status ReadRegularFile(const std::filesystem::path& path, uint64_t max_bytes, std::vector<uint8_t>* out);

// stat(2) of a regular file (links followed): its size and modification time in ns since the epoch.
// False when it does not exist or is not a regular file. Cheap: the manifest's fingerprints are
// compared by size and mtime first, and files are hashed only when those differ.
bool StatRegularFile(const std::filesystem::path& path, uint64_t* size, int64_t* mtime_ns);

// A readable name for the kind of a non-regular file ("a directory", "a FIFO", ...), from st_mode.
const char* FileKindName(unsigned mode);

}  // namespace yc
