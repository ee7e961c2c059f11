#include "libcache/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include <xxhash.h>

#include "libcache/base/file_read.h"

namespace yc {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }


}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::Open(const std::filesystem::path& path, AccessAdvice advice,
                                                     bool willneed) {
  const std::string p = path.string();
  uint64_t file_size = 0;
  // A FIFO or device is refused, not waited on.
  YC_ASSIGN_OR_RETURN(ScopedFd fd, OpenRegularFile(path, &file_size));
  const size_t size = static_cast<size_t>(file_size);
  if (size == 0) return std::unique_ptr<MappedFile>(new MappedFile(p, nullptr, 0, std::move(fd)));
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) return Status::IOError(Status::At(p, Errno("mmap")));
  int flag = MADV_NORMAL;
  if (advice == AccessAdvice::kRandom) flag = MADV_RANDOM;
  if (advice == AccessAdvice::kSequential) flag = MADV_SEQUENTIAL;
  if (flag != MADV_NORMAL) ::madvise(addr, size, flag);  // advisory: failure changes nothing
  if (willneed) ::madvise(addr, size, MADV_WILLNEED);
  return std::unique_ptr<MappedFile>(new MappedFile(p, static_cast<const uint8_t*>(addr), size, std::move(fd)));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::WillNeed(uint64_t offset, uint64_t length) const { WillNeedPages(data_, size_, offset, length); }

Status MappedFile::DropCachedPages() const { return DropPages(data_, size_, fd_.get(), path_); }

void WillNeedPages(const uint8_t* map, size_t size, uint64_t offset, uint64_t length) {
  if (map == nullptr || offset >= size) return;
  if (length > size - offset) length = size - offset;
  // madvise wants a page-aligned start.
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset & ~(page - 1);
  ::madvise(const_cast<uint8_t*>(map) + start, length + (offset - start), MADV_WILLNEED);
}

Status DropPages(const uint8_t* map, size_t size, int fd, const std::string& path) {
  if (map != nullptr && size > 0 && ::madvise(const_cast<uint8_t*>(map), size, MADV_DONTNEED) != 0)
    return Status::IOError(Status::At(path, Errno("madvise(MADV_DONTNEED)")));
  if (fd < 0) return Status::OK();
  const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // returns the error, not errno
  if (rc != 0) return Status::IOError(Status::At(path, std::string("posix_fadvise(DONTNEED): ") + std::strerror(rc)));
  return Status::OK();
}

Status HashFile(const std::filesystem::path& path, uint64_t* hash, uint64_t* size) {
  const std::string p = path.string();
  YC_ASSIGN_OR_RETURN(const ScopedFd fd, OpenRegularFile(path));
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) return Status::IOError(Status::At(p, "out of memory for the hash state"));
  XXH3_64bits_reset(state);
  std::vector<uint8_t> buffer(4 << 20);
  uint64_t total = 0;
  Status status;
  for (;;) {
    const ssize_t n = ::pread(fd.get(), buffer.data(), buffer.size(), static_cast<off_t>(total));
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Status::IOError(Status::At(p, Errno("read")));
      break;
    }
    if (n == 0) break;
    XXH3_64bits_update(state, buffer.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  if (status.ok()) {
    *hash = XXH3_64bits_digest(state);
    if (size != nullptr) *size = total;
  }
  XXH3_freeState(state);
  return status;
}

Status SyncPath(const std::filesystem::path& path) {
  const std::string p = path.string();
  ScopedFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::IOError(Status::At(p, Errno("open for fsync")));
  if (::fsync(fd.get()) != 0) return Status::IOError(Status::At(p, Errno("fsync")));
  return Status::OK();
}

}  // namespace yc
