#include "libcache/base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "libcache/base/pid_files.h"

namespace yc {

namespace fs = std::filesystem;

namespace {

const char* KindName(mode_t mode) {
  if (S_ISLNK(mode)) return "symbolic link";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

std::string Errno() { return std::strerror(errno); }

fs::path FolderOf(const fs::path& path) { return path.has_parent_path() ? path.parent_path() : fs::path("."); }

int OpenExclusive(const fs::path& temp) {
  return ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

}  // namespace

Status CheckReplaceable(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::OK();
    return Status::IOError(Status::At(path.string(), Errno()));
  }
  if (S_ISREG(st.st_mode)) return Status::OK();
  return Status::IOError(
      Status::At(path.string(), std::string("exists and is a ") + KindName(st.st_mode) + ", not a regular file; not replaced"));
}

Result<OutputFile> OutputFile::Create(const fs::path& path, const std::string& suffix) {
  if (path.filename().empty()) return Status::InvalidArgument(Status::At(path.string(), "names a folder, not a file"));
  const fs::path temp = FolderOf(path) / (TempFileName(path.filename().string()) + suffix);
  int fd = OpenExclusive(temp);
  if (fd < 0 && errno == EEXIST) {
    // Our own naming and our pid: left by a killed process whose pid this one reuses. Only a regular
    // file is removed; anything else of that name is somebody's and stays.
    struct stat st {};
    if (::lstat(temp.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(temp.c_str()) == 0) fd = OpenExclusive(temp);
  }
  if (fd < 0) return Status::IOError(Status::At(temp.string(), "cannot create the temp file: " + Errno()));
  return OutputFile(path, temp, fd);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), fd_(other.fd_), done_(other.done_) {
  other.fd_ = -1;
  other.done_ = true;
}

OutputFile::~OutputFile() {
  if (!done_) Discard();
}

void OutputFile::Discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  done_ = true;
}

Status OutputFile::Write(std::string_view bytes) {
  if (fd_ < 0) return Status::IOError(Status::At(path_.string(), "the temp file is closed"));
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(Status::At(path_.string(), "cannot write: " + Errno()));
    p += n;
    left -= static_cast<size_t>(n);
  }
  return Status::OK();
}

Status OutputFile::Commit() {
  if (done_) return Status::IOError(Status::At(path_.string(), "already committed or discarded"));
  Status st;
  // The descriptor of the file as created; a writer that reopened the temp by name wrote the same inode.
  if (::fsync(fd_) != 0) st = Status::IOError(Status::At(path_.string(), "cannot sync: " + Errno()));
  if (::close(fd_) != 0 && st.ok()) st = Status::IOError(Status::At(path_.string(), "cannot close: " + Errno()));
  fd_ = -1;
  if (st.ok()) st = CheckReplaceable(path_);
  // rename(2) replaces the directory entry itself: even a link that appeared since is not followed.
  if (st.ok() && ::rename(temp_.c_str(), path_.c_str()) != 0) {
    st = Status::IOError(Status::At(path_.string(), "cannot rename the temp file " + temp_.filename().string() +
                                                        " to it: " + Errno()));
  }
  if (!st.ok()) {
    Discard();
    return st;
  }
  done_ = true;
  const int dir = ::open(FolderOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {  // durability of the name; a folder that cannot be opened is not worth failing for
    ::fsync(dir);
    ::close(dir);
  }
  return Status::OK();
}

Status WriteFileAtomically(const fs::path& path, std::string_view bytes) {
  YC_ASSIGN_OR_RETURN(OutputFile f, OutputFile::Create(path));
  YC_RETURN_IF_ERROR(f.Write(bytes));
  return f.Commit();
}

}  // namespace yc
