#include "libcache/build/atomic_dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "libcache/base/file_read.h"
#include "libcache/base/mapped_file.h"
#include "libcache/base/pid_files.h"
#include "libcache/format/manifest.h"

namespace yc {
namespace fs = std::filesystem;

namespace {

constexpr const char* kStagingTag = ".building-";
constexpr const char* kParkedSuffix = ".old";  // an old cache parked by the two-rename fallback
constexpr const char* kAuditName = "audit.json";  // builder.h's kAuditFileName (libcache cannot include it)
constexpr const char* kManifestTmpName = "manifest.json.tmp";

bool AllDigits(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "<split>-NNNNN.shard" (the writer numbers with %05d, so 5 digits or more) or "<split>.lmdb". With an
// empty `split`, any non-empty split name.
bool IsDataFileName(const std::string& name, const std::string& split) {
  if (EndsWith(name, ".lmdb")) {
    const std::string stem = name.substr(0, name.size() - 5);
    return split.empty() ? !stem.empty() : stem == split;
  }
  if (!EndsWith(name, ".shard")) return false;
  const size_t end = name.size() - 6;
  const size_t dash = name.rfind('-', end);
  if (dash == std::string::npos || dash == 0 || end - dash - 1 < 5 || !AllDigits(name, dash + 1, end)) return false;
  return split.empty() || (dash == split.size() && name.compare(0, dash, split) == 0);
}

// A name the builder writes into a cache directory, whatever the manifest says (staging dirs have none).
bool IsCacheFileName(const std::string& name) {
  return name == kManifestFileName || name == kManifestTmpName || name == kAuditName || IsDataFileName(name, "");
}

bool IsRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(p, ec));
}

// Deletes the cache files in `dir`, then `dir` itself if that left it empty. Used on directories that
// only a build creates (staging dirs, a swapped-out old cache): should anything else have appeared in
// one, it is left alone with its directory rather than deleted with it.
void RemoveCacheFiles(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) {
    fs::remove(dir, ec);  // the link only, never what it points at
    return;
  }
  std::vector<fs::path> ours;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (IsCacheFileName(e.path().filename().string()) && IsRegularFile(e.path())) ours.push_back(e.path());
  }
  for (const fs::path& p : ours) fs::remove(p, ec);
  fs::remove(dir, ec);  // fails, harmlessly, when something else is still inside
}

// The pid in "<prefix><pid>" or "<prefix><pid>.old", or -1 when `name` is not exactly that: a user's
// ".cache.building-notes" is not ours.
long StagingPid(const std::string& name, const std::string& prefix) {
  const size_t parked = std::strlen(kParkedSuffix);
  return TaggedPid(EndsWith(name, kParkedSuffix) ? name.substr(0, name.size() - parked) : name, prefix);
}

// Staging dirs of `target` left by builds that died (kill -9, power loss): safe to delete.
void RemoveStaleStaging(const fs::path& target) {
  const std::string prefix = "." + target.filename().string() + kStagingTag;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& e : fs::directory_iterator(target.parent_path(), ec)) {
    const long pid = StagingPid(e.path().filename().string(), prefix);
    if (pid > 0 && !ProcessAlive(pid)) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) RemoveCacheFiles(p);
}

int Exchange(const fs::path& a, const fs::path& b) {
#ifdef SYS_renameat2
  return static_cast<int>(syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), 2 /*RENAME_EXCHANGE*/));
#else
  errno = ENOSYS;
  return -1;
#endif
}

Status Refuse(const fs::path& dir, const std::string& why) {
  return Status::InvalidArgument(
      Status::At(dir.string(), why + "; refusing to replace it (choose another --out, or empty it yourself)"));
}

// The names a cache with manifest `m` may hold besides its data-file patterns.
std::set<std::string> NamedFiles(const Manifest& m) {
  std::set<std::string> names = {kManifestFileName, kManifestTmpName, kAuditName};
  for (const SplitManifest& s : m.splits) {
    for (const ShardEntry& e : s.shards) names.insert(e.file);
    if (s.lmdb) names.insert(s.lmdb->file);
  }
  return names;
}

bool BelongsToCache(const Manifest& m, const std::set<std::string>& named, const std::string& name) {
  if (named.count(name) > 0) return true;
  return std::any_of(m.splits.begin(), m.splits.end(),
                     [&](const SplitManifest& s) { return IsDataFileName(name, s.name); });
}

}  // namespace

Status CheckReplaceableCacheDir(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  // Absent is told by the status type, not by comparing `ec` with std::errc: in a Python process on the GPU
  // host that comparison said "not ENOENT" for ENOENT (it goes by the error category's address, likely two
  // libstdc++ copies there), and an absent folder read as a stat error.
  if (st.type() == fs::file_type::not_found) return Status::OK();
  if (ec) return Status::IOError(Status::At(dir.string(), "cannot stat: " + ec.message()));
  if (!fs::is_directory(st)) return Status::InvalidArgument(Status::At(dir.string(), "exists and is not a directory"));

  std::vector<std::string> entries;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    entries.push_back(it->path().filename().string());
  if (ec) return Status::IOError(Status::At(dir.string(), "cannot list: " + ec.message()));
  if (entries.empty()) return Status::OK();
  std::sort(entries.begin(), entries.end());  // the same entry is named on every run

  if (std::find(entries.begin(), entries.end(), kManifestFileName) == entries.end())
    return Refuse(dir, "is not empty and is not a yolocache cache (no manifest.json; it holds '" + entries.front() + "')");
  const fs::path manifest_path = dir / kManifestFileName;
  if (!IsRegularFile(manifest_path)) return Refuse(dir, "its manifest.json is not a regular file");
  std::string text;
  Status read = ReadRegularFile(manifest_path, kMaxMetadataBytes, &text);
  if (!read.ok()) return Refuse(dir, "its manifest.json cannot be read (" + read.message() + ")");
  // Content only: an old-format or damaged cache of ours is still ours to replace (its checksum is
  // verify's business); the entry check below keeps foreign files safe either way.
  Result<Manifest> manifest = ParseManifestContent(text, manifest_path.string());
  if (!manifest.ok())
    return Refuse(dir, "holds a manifest.json that is not a yolocache manifest (" + manifest.status().message() + ")");

  const std::set<std::string> named = NamedFiles(*manifest);
  for (const std::string& name : entries) {
    if (!BelongsToCache(*manifest, named, name))
      return Refuse(dir, "is a yolocache cache but also holds '" + name + "', which is not part of one");
    if (!IsRegularFile(dir / name)) return Refuse(dir, "holds '" + name + "', which is not a regular file");
  }
  return Status::OK();
}

Result<StagingDir> StagingDir::Create(const fs::path& target_in) {
  std::error_code ec;
  fs::path target = fs::absolute(target_in, ec).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  YC_RETURN_IF_ERROR(CheckReplaceableCacheDir(target));
  fs::create_directories(target.parent_path(), ec);
  if (ec) return Status::IOError(Status::At(target.parent_path().string(), ec.message()));
  RemoveStaleStaging(target);
  const fs::path staging =
      target.parent_path() / ("." + target.filename().string() + kStagingTag + std::to_string(getpid()));
  if (fs::exists(fs::symlink_status(staging, ec))) RemoveCacheFiles(staging);  // our pid's, from an earlier run
  if (!fs::create_directory(staging, ec) || ec)
    return Status::IOError(Status::At(staging.string(), "cannot create staging directory" +
                                                            (ec ? ": " + ec.message() : std::string(": it exists"))));
  return StagingDir(staging, target);
}

StagingDir::StagingDir(StagingDir&& other) noexcept
    : path_(std::move(other.path_)), target_(std::move(other.target_)), committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object owns nothing
}

StagingDir::~StagingDir() {
  if (committed_) return;
  RemoveCacheFiles(path_);
}

Status StagingDir::Commit() {
  std::error_code ec;
  // The target was checked when the build started; whatever appeared in it since must not be lost.
  YC_RETURN_IF_ERROR(CheckReplaceableCacheDir(target_));
  if (!fs::exists(fs::symlink_status(target_, ec))) {
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      return Status::IOError(Status::At(target_.string(), std::string("rename failed: ") + std::strerror(errno)));
  } else if (Exchange(path_, target_) != 0) {
    // Filesystems without RENAME_EXCHANGE: two renames, with a window in which only the old cache
    // (under its parked name) exists.
    const fs::path parked = path_.string() + kParkedSuffix;
    if (::rename(target_.c_str(), parked.c_str()) != 0)
      return Status::IOError(Status::At(target_.string(), std::string("rename failed: ") + std::strerror(errno)));
    if (::rename(path_.c_str(), target_.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      ::rename(parked.c_str(), target_.c_str());  // put the old cache back
      return Status::IOError(Status::At(target_.string(), "rename failed: " + why));
    }
    RemoveCacheFiles(parked);
  } else {
    RemoveCacheFiles(path_);  // now holds the previous cache
  }
  committed_ = true;
  return SyncPath(target_.parent_path());
}

}  // namespace yc
