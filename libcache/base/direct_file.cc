#include "libcache/base/direct_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace yc {

Result<std::unique_ptr<DirectFile>> DirectFile::Open(const std::string& path, bool direct) {
  uint64_t size = 0;
  YC_ASSIGN_OR_RETURN(ScopedFd plain, OpenRegularFile(path, &size));  // refuses FIFOs and devices first
  if (!direct) return std::unique_ptr<DirectFile>(new DirectFile(path, std::move(plain), size, false));
  // Reopen the file we checked (through /proc/self/fd, so a rename in between cannot swap it).
  const std::string self = "/proc/self/fd/" + std::to_string(plain.get());
  const int fd = ::open(self.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return std::unique_ptr<DirectFile>(new DirectFile(path, std::move(plain), size, false));
  return std::unique_ptr<DirectFile>(new DirectFile(path, ScopedFd(fd), size, true));
}

Status DirectFile::ReadAligned(uint64_t offset, uint64_t length, uint8_t* dst) const {
  const uint64_t end = offset + length < size_ ? offset + length : size_;
  uint64_t at = offset;
  while (at < end) {
    // O_DIRECT wants a whole number of blocks, also for the last one (the file's tail is read short).
    const uint64_t want = AlignUp(end - at);
    const ssize_t n = ::pread(fd_.get(), dst + (at - offset), static_cast<size_t>(want), static_cast<off_t>(at));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Status::At(path_, "read of " + std::to_string(want) + " bytes at offset " +
                                                   std::to_string(at) + ": " + std::strerror(errno)));
    }
    if (n == 0)
      return Status::IOError(Status::At(path_, "unexpected end of file at offset " + std::to_string(at) +
                                                   " (the file shrank while open)"));
    at += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

}  // namespace yc
