#include "libcache/base/write_at.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace yc {

Status WriteAllAt(int fd, const uint8_t* p, uint64_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::IOError(Status::At(path, std::string("write failed: ") + std::strerror(errno)));
    p += w, n -= static_cast<uint64_t>(w), offset += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

}  // namespace yc
