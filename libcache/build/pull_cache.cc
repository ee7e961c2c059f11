#include "libcache/build/pull_cache.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <xxhash.h>

#include "libcache/base/file_read.h"
#include "libcache/base/write_at.h"
#include "libcache/build/atomic_dir.h"
#include "libcache/cache.h"
#include "libcache/format/manifest.h"

namespace yc {

namespace fs = std::filesystem;

namespace {

// A plain file name: what a manifest may name inside the cache folder (never a path out of it).
bool PlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::string ReadWhole(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// One ranged GET of the fetch: `length` bytes at `offset` of files[file].
struct Chunk {
  size_t file = 0;
  uint64_t offset = 0, length = 0;
};

class Fetcher {
 public:
  Fetcher(const ObjectStore& store, const PullOptions& o, const std::vector<ManifestFile>& files, const fs::path& dir)
      : store_(store), o_(o), files_(files), dir_(dir) {}
  ~Fetcher() {
    for (auto& [i, fd] : fds_) ::close(fd);
  }
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // Fetches files[i] for every i in `wanted` into dir, in parallel chunks.
  Status Run(const std::vector<size_t>& wanted, uint64_t total) {
    std::vector<Chunk> chunks;
    for (size_t i : wanted) {
      const fs::path path = dir_ / files_[i].name;
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd < 0) return Status::IOError(Status::At(path.string(), std::strerror(errno)));
      fds_[i] = fd;
      for (uint64_t off = 0; off < files_[i].bytes; off += o_.chunk_bytes) {
        chunks.push_back({i, off, std::min(o_.chunk_bytes, files_[i].bytes - off)});
      }
    }
    total_ = total;
    std::vector<std::thread> threads;
    const int n = std::max(1, std::min<int>(o_.threads, static_cast<int>(chunks.size())));
    for (int t = 0; t < n; ++t) threads.emplace_back([&] { Work(chunks); });
    for (auto& t : threads) t.join();
    Status closed;
    for (auto& [i, fd] : fds_) {
      if (::fsync(fd) != 0 && closed.ok()) {
        closed = Status::IOError(Status::At((dir_ / files_[i].name).string(), std::strerror(errno)));
      }
      ::close(fd);
    }
    fds_.clear();
    YC_RETURN_IF_ERROR(first_error_);
    return closed;
  }
  void set_done(uint64_t done) { done_ = done; }

 private:
  void Work(const std::vector<Chunk>& chunks) {
    std::vector<uint8_t> buffer;
    for (size_t c = next_++; c < chunks.size(); c = next_++) {
      if (Failed()) return;
      if (o_.cancel != nullptr && o_.cancel->load()) return Fail(Status::Cancelled("interrupted"));
      const Chunk& k = chunks[c];
      buffer.resize(k.length);
      const ManifestFile& f = files_[k.file];
      Status st = store_.Read(f.name, k.offset, k.length, buffer.data());
      if (st.ok()) st = WriteAllAt(fds_.at(k.file), buffer.data(), k.length, k.offset, (dir_ / f.name).string());
      if (!st.ok()) return Fail(st);
      std::lock_guard<std::mutex> lock(mu_);
      done_ += k.length;
      if (o_.progress) o_.progress(done_, total_);
    }
  }
  bool Failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !first_error_.ok();
  }
  void Fail(const Status& st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.ok()) first_error_ = st;
  }

  const ObjectStore& store_;
  const PullOptions& o_;
  const std::vector<ManifestFile>& files_;
  fs::path dir_;
  std::map<size_t, int> fds_;
  std::atomic<size_t> next_{0};
  std::mutex mu_;
  Status first_error_;
  uint64_t done_ = 0, total_ = 0;
};

// The files of the local copy that a new manifest can keep: same name, size and checksum.
std::map<std::string, ManifestFile> KeepableFiles(const fs::path& local) {
  std::map<std::string, ManifestFile> out;
  Result<Manifest> old = ReadManifest(local);
  if (!old.ok()) return out;
  for (const ManifestFile& f : ManifestFiles(*old)) out[f.name] = f;
  return out;
}

Status CheckFreeSpace(const fs::path& root, uint64_t needed, const std::string& what) {
  struct statvfs s {};
  if (::statvfs(root.c_str(), &s) != 0) return Status::OK();  // unknown: the writes will tell
  const uint64_t free_bytes = static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
  if (needed <= free_bytes) return Status::OK();
  return Status::ResourceExhausted(Status::At(root.string(), "no room for " + what + ": it needs " +
                                                                 std::to_string(needed >> 20) + " MiB, " +
                                                                 std::to_string(free_bytes >> 20) + " MiB are free"));
}

// The default check of a fetched copy: it opens, and every byte matches the manifest's checksums.
Status CheckFetchedCopy(const fs::path& staged) {
  OpenOptions check;
  check.verify_files = true;
  Result<std::unique_ptr<Cache>> opened = Cache::Open(staged, check);
  return opened.ok() ? Status::OK() : opened.status();
}

}  // namespace

fs::path PulledCachePath(const fs::path& root, const ObjectLocation& at) {
  const std::string url = at.Display();
  std::string first = at.scheme == ObjectLocation::Scheme::kS3 ? at.bucket : url.substr(url.find("://") + 3);
  first = first.substr(0, first.find('/'));
  const std::string tail = at.scheme == ObjectLocation::Scheme::kS3 ? at.prefix : url;
  std::string last = tail.substr(tail.rfind('/') == std::string::npos ? 0 : tail.rfind('/') + 1);
  std::string name = first + (last.empty() || last == first ? "" : "-" + last);
  for (char& c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '_';
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(XXH3_64bits(url.data(), url.size()) & 0xffffffffu));
  return root / "remote" / (name + "-" + hex);
}

Result<PullReport> PullCache(const ObjectStore& store, const PullOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  PullReport report;
  report.dir = PulledCachePath(o.cache_root, store.location());
  const std::string where = store.location().Display(kManifestFileName);
  YC_ASSIGN_OR_RETURN(std::string manifest_text, store.ReadAll(kManifestFileName, kMaxMetadataBytes));
  YC_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(manifest_text, where));
  const std::vector<ManifestFile> files = ManifestFiles(manifest);
  for (const ManifestFile& f : files) {
    if (!PlainName(f.name)) return Status::Corruption(Status::At(where, "names a file outside the cache: " + f.name));
  }
  std::error_code ec;
  if (!o.refetch && fs::exists(report.dir / kManifestFileName, ec) && ReadWhole(report.dir / kManifestFileName) == manifest_text &&
      Cache::Open(report.dir).ok()) {
    report.reused = true;
    return report;
  }
  if (o.reuse_only) {
    report.ready = false;
    return report;
  }

  // What the local copy already holds, and what has to come over.
  const std::map<std::string, ManifestFile> keepable =
      o.refetch ? std::map<std::string, ManifestFile>{} : KeepableFiles(report.dir);
  std::vector<size_t> fetch;
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    auto k = keepable.find(files[i].name);
    const bool keep = k != keepable.end() && k->second.bytes == files[i].bytes && k->second.checksum == files[i].checksum;
    if (!keep) fetch.push_back(i), report.bytes_fetched += files[i].bytes;
    (keep ? report.files_kept : report.files_fetched) += 1;
    if (keep) report.bytes_kept += files[i].bytes;
    total += files[i].bytes;
  }
  fs::create_directories(report.dir.parent_path(), ec);
  if (ec) return Status::IOError(Status::At(report.dir.parent_path().string(), "cannot create: " + ec.message()));
  YC_RETURN_IF_ERROR(CheckFreeSpace(report.dir.parent_path(), report.bytes_fetched, store.location().Display()));

  YC_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::Create(report.dir));
  for (size_t i = 0; i < files.size(); ++i) {
    if (std::find(fetch.begin(), fetch.end(), i) != fetch.end()) continue;
    const fs::path from = report.dir / files[i].name, to = staging.path() / files[i].name;
    fs::create_hard_link(from, to, ec);  // the copy being replaced holds the same bytes
    if (ec) fs::copy_file(from, to, ec);
    if (ec) return Status::IOError(Status::At(to.string(), "cannot keep the local copy: " + ec.message()));
  }
  Fetcher fetcher(store, o, files, staging.path());
  fetcher.set_done(report.bytes_kept);
  YC_RETURN_IF_ERROR(fetcher.Run(fetch, total));
  {
    std::ofstream m(staging.path() / kManifestFileName, std::ios::binary);
    m << manifest_text;
    if (!m.flush()) return Status::IOError(Status::At((staging.path() / kManifestFileName).string(), "write failed"));
  }
  YC_RETURN_IF_ERROR((o.check ? o.check(staging.path()) : CheckFetchedCopy(staging.path()))
                         .WithContext("fetched from " + store.location().Display() + ", the copy does not check out"));
  YC_RETURN_IF_ERROR(staging.Commit());
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace yc
