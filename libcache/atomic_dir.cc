#include "libcache/atomic_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "libcache/manifest.h"
#include "libcache/mapped_file.h"

namespace yc {
namespace fs = std::filesystem;

namespace {

constexpr const char* kStagingTag = ".building-";

bool ProcessAlive(long pid) { return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Staging dirs of `target` left by builds that died (kill -9, power loss): safe to delete.
void RemoveStaleStaging(const fs::path& target) {
  const std::string prefix = "." + target.filename().string() + kStagingTag;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(target.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (!ProcessAlive(pid)) fs::remove_all(e.path(), ec);
  }
}

int Exchange(const fs::path& a, const fs::path& b) {
#ifdef SYS_renameat2
  return static_cast<int>(syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), 2 /*RENAME_EXCHANGE*/));
#else
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

Result<StagingDir> StagingDir::Create(const fs::path& target_in) {
  std::error_code ec;
  fs::path target = fs::absolute(target_in, ec).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec))
      return Status::InvalidArgument(Status::At(target.string(), "exists and is not a directory"));
    if (!fs::exists(target / kManifestFileName, ec) && !fs::is_empty(target, ec))
      return Status::InvalidArgument(
          Status::At(target.string(), "exists, is not empty and is not a yolocache cache (no manifest.json); "
                                      "refusing to replace it"));
  }
  fs::create_directories(target.parent_path(), ec);
  if (ec) return Status::IOError(Status::At(target.parent_path().string(), ec.message()));
  RemoveStaleStaging(target);
  const fs::path staging =
      target.parent_path() / ("." + target.filename().string() + kStagingTag + std::to_string(getpid()));
  fs::remove_all(staging, ec);
  fs::create_directory(staging, ec);
  if (ec) return Status::IOError(Status::At(staging.string(), "cannot create staging directory: " + ec.message()));
  return StagingDir(staging, target);
}

StagingDir::StagingDir(StagingDir&& other) noexcept
    : path_(std::move(other.path_)), target_(std::move(other.target_)), committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object owns nothing
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Status StagingDir::Commit() {
  std::error_code ec;
  if (!fs::exists(target_, ec)) {
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      return Status::IOError(Status::At(target_.string(), std::string("rename failed: ") + std::strerror(errno)));
  } else if (Exchange(path_, target_) != 0) {
    // Filesystems without RENAME_EXCHANGE: two renames, with a window in which only the old cache
    // (under its parked name) exists.
    const fs::path parked = path_.string() + ".old";
    if (::rename(target_.c_str(), parked.c_str()) != 0 || ::rename(path_.c_str(), target_.c_str()) != 0)
      return Status::IOError(Status::At(target_.string(), std::string("rename failed: ") + std::strerror(errno)));
    fs::remove_all(parked, ec);
  } else {
    fs::remove_all(path_, ec);  // now holds the previous cache
  }
  committed_ = true;
  return SyncPath(target_.parent_path());
}

}  // namespace yc
