#include "libcache/base/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace yc {

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) ::close(fd_);
}

const char* FileKindName(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

Result<ScopedFd> OpenRegularFile(const std::filesystem::path& path, uint64_t* size) {
  const std::string p = path.string();
  ScopedFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(Status::At(p, "no such file"));
    return Status::IOError(Status::At(p, std::string("open: ") + std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::IOError(Status::At(p, std::string("fstat: ") + std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return Status::DataError(Status::At(p, std::string("not a regular file (") + FileKindName(st.st_mode) + ")"));
  // Regular files ignore O_NONBLOCK today; clearing it keeps reads blocking should that ever change.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

namespace {

// Shared by the string and byte-vector forms; `Buffer` has resize/size/data over 1-byte elements.
template <typename Buffer>
Status ReadWholeRegularFile(const std::filesystem::path& path, uint64_t max_bytes, Buffer* out) {
  uint64_t size = 0;
  YC_ASSIGN_OR_RETURN(const ScopedFd fd, OpenRegularFile(path, &size));
  const std::string p = path.string();
  const auto too_large = [&](uint64_t bytes) {
    return Status::IOError(Status::At(p, "file is " + std::to_string(bytes) + " bytes, more than the " +
                                             std::to_string(max_bytes) + " this file may have"));
  };
  if (size > max_bytes) return too_large(size);
  out->resize(static_cast<size_t>(size));
  size_t done = 0;
  for (;;) {
    if (done == out->size()) {
      // The file may have grown since fstat: read on, within the bound, until EOF.
      if (out->size() >= max_bytes) {
        char probe;
        const ssize_t more = ::read(fd.get(), &probe, 1);
        if (more > 0) return too_large(out->size() + 1);
        if (more == 0) break;
        if (errno == EINTR) continue;
        return Status::IOError(Status::At(p, std::string("read: ") + std::strerror(errno)));
      }
      out->resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, out->size() + (uint64_t{1} << 16))));
    }
    const ssize_t n = ::read(fd.get(), reinterpret_cast<char*>(out->data()) + done, out->size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Status::At(p, std::string("read: ") + std::strerror(errno)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  return Status::OK();
}

}  // namespace

Status ReadRegularFile(const std::filesystem::path& path, uint64_t max_bytes, std::string* out) {
  return ReadWholeRegularFile(path, max_bytes, out);
}

Status ReadRegularFile(const std::filesystem::path& path, uint64_t max_bytes, std::vector<uint8_t>* out) {
  return ReadWholeRegularFile(path, max_bytes, out);
}

bool StatRegularFile(const std::filesystem::path& path, uint64_t* size, int64_t* mtime_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = static_cast<uint64_t>(st.st_size);
  *mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

}  // namespace yc
