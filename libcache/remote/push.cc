#include "libcache/remote/push.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "libcache/cache.h"
#include "libcache/format/manifest.h"

namespace yc {

namespace {

constexpr const char* kChecksumKey = "xxh3";

// Whether the object already holds this file (same size and recorded checksum).
Result<bool> AlreadyThere(const ObjectStore& store, const ManifestFile& f) {
  Result<ObjectInfo> info = store.Stat(f.name);
  if (!info.ok()) {
    if (info.status().code() == Status::Code::kNotFound) return false;
    return info.status();
  }
  const auto sum = info->metadata.find(kChecksumKey);
  return info->size == f.bytes && sum != info->metadata.end() && sum->second == ChecksumText(f.checksum);
}

}  // namespace

std::string ChecksumText(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

Result<PushReport> PushCache(const std::filesystem::path& dir, const ObjectStore& store, const PushOptions& o) {
  if (!store.writable()) return Status::InvalidArgument(Status::At(store.location().Display(), "push needs an s3:// location"));
  YC_ASSIGN_OR_RETURN(std::unique_ptr<Cache> cache, Cache::Open(dir));  // a damaged cache is not pushed
  const Manifest& manifest = cache->manifest();
  if (o.create_bucket) YC_RETURN_IF_ERROR(store.CreateBucket());
  const std::vector<ManifestFile> files = ManifestFiles(manifest);

  // Which files differ (one HEAD each), then the old manifest goes before any of them changes.
  std::vector<bool> send(files.size());
  PushReport report;
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    YC_ASSIGN_OR_RETURN(bool there, AlreadyThere(store, files[i]));
    send[i] = !there;
    (there ? report.files_skipped : report.files_uploaded) += 1;
    (there ? report.bytes_skipped : report.bytes_uploaded) += files[i].bytes;
    total += files[i].bytes;
  }
  const std::filesystem::path manifest_path = dir / kManifestFileName;
  std::error_code ec;
  const uint64_t manifest_bytes = std::filesystem::file_size(manifest_path, ec);
  if (ec) return Status::IOError(Status::At(manifest_path.string(), ec.message()));
  total += manifest_bytes;
  if (std::any_of(send.begin(), send.end(), [](bool b) { return b; })) {
    YC_RETURN_IF_ERROR(store.Delete(kManifestFileName));
  }

  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  uint64_t done = report.bytes_skipped;
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!first_error.ok()) return;
      }
      Status st = send[i] ? store.Upload(files[i].name, dir / files[i].name, {{kChecksumKey, ChecksumText(files[i].checksum)}})
                          : Status::OK();
      std::lock_guard<std::mutex> lock(mu);
      if (!st.ok() && first_error.ok()) first_error = st;
      done += files[i].bytes;
      if (st.ok() && o.progress) o.progress(done, total);
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(o.threads, static_cast<int>(files.size())));
  for (int t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  YC_RETURN_IF_ERROR(first_error);
  YC_RETURN_IF_ERROR(store.Upload(kManifestFileName, manifest_path));
  ++report.files_uploaded;
  report.bytes_uploaded += manifest_bytes;
  if (o.progress) o.progress(total, total);
  return report;
}

}  // namespace yc
