#include "libcache/build/stream_cache.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "libcache/base/write_at.h"
#include "libcache/build/atomic_dir.h"
#include "libcache/build/pull_cache.h"
#include "libcache/cache.h"
#include "libcache/format/manifest.h"
#include "libcache/format/shard_format.h"

namespace yc {

namespace fs = std::filesystem;

namespace {

std::string Mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

Status WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  return f.flush() ? Status::OK() : Status::IOError(Status::At(path.string(), "write failed"));
}

}  // namespace

fs::path StreamedCachePath(const fs::path& root, const ObjectLocation& at, int rank, int world_size) {
  std::string name = PulledCachePath(root, at).filename().string();
  if (world_size > 1) name += "-rank" + std::to_string(rank) + "of" + std::to_string(world_size);
  return root / "stream" / name;
}

Result<std::unique_ptr<StreamCache>> StreamCache::Open(const ObjectStore& store, const StreamOptions& o) {
  const std::string where = store.location().Display(kManifestFileName);
  if (o.budget_bytes == 0) return Status::InvalidArgument("stream: no budget");
  if (o.budget_bytes < o.window_bytes) {
    return Status::ResourceExhausted(Status::At(store.location().Display(),
                                                "--cache-budget " + Mib(o.budget_bytes) + " is smaller than one window (" +
                                                    Mib(o.window_bytes) + "): nothing fetched; a larger budget, or a "
                                                    "smaller --window"));
  }
  YC_ASSIGN_OR_RETURN(std::string manifest_text, store.ReadAll(kManifestFileName, kMaxMetadataBytes));
  YC_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(manifest_text, where));
  if (manifest.backend != Backend::kShards) {
    return Status::Unsupported(Status::At(store.location().Display(), "an LMDB cache cannot be streamed window by "
                                                                      "window (one data.mdb): fetch it whole, without "
                                                                      "--cache-budget"));
  }
  std::unique_ptr<StreamCache> s(new StreamCache(store, o));
  if (s->o_.block_bytes == 0) {
    s->o_.block_bytes = std::clamp<uint64_t>(o.window_bytes / 64, uint64_t{64} << 10, uint64_t{1} << 20);
  }
  s->dir_ = StreamedCachePath(o.cache_root, store.location(), o.rank, o.world_size);
  std::error_code ec;
  if (fs::exists(s->dir_, ec)) {  // left by a run that was killed: only cache files, all of them ours
    YC_RETURN_IF_ERROR(CheckReplaceableCacheDir(s->dir_));
    for (const auto& e : fs::directory_iterator(s->dir_, ec)) fs::remove(e.path(), ec);
  }
  fs::create_directories(s->dir_, ec);
  if (ec) return Status::IOError(Status::At(s->dir_.string(), "cannot create: " + ec.message()));
  struct statvfs vfs {};
  if (::statvfs(s->dir_.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (o.budget_bytes > free_bytes) {
      return Status::ResourceExhausted(Status::At(s->dir_.string(), "--cache-budget is " + Mib(o.budget_bytes) +
                                                                        " but only " + Mib(free_bytes) + " are free"));
    }
  }
  s->created_.push_back(s->dir_ / kManifestFileName);
  YC_RETURN_IF_ERROR(WriteFile(s->dir_ / kManifestFileName, manifest_text));
  if (manifest.audit_report) {
    s->created_.push_back(s->dir_ / manifest.audit_report->file);
    YC_ASSIGN_OR_RETURN(std::string audit, store.ReadAll(manifest.audit_report->file, kMaxMetadataBytes));
    YC_RETURN_IF_ERROR(WriteFile(s->dir_ / manifest.audit_report->file, audit));
  }
  // Every shard as a sparse file of its full size.
  for (const SplitManifest& split : manifest.splits) {
    for (const ShardEntry& entry : split.shards) {
      if (entry.file.empty() || entry.file.find('/') != std::string::npos || entry.file == "..") {
        return Status::Corruption(Status::At(where, "names a file outside the cache: " + entry.file));
      }
      const fs::path path = s->dir_ / entry.file;
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd < 0) return Status::IOError(Status::At(path.string(), std::strerror(errno)));
      s->created_.push_back(path);
      Shard shard;
      shard.name = entry.file, shard.size = entry.bytes, shard.fd = fd;
      shard.blocks.resize((entry.bytes + s->o_.block_bytes - 1) / s->o_.block_bytes);
      s->by_name_[entry.file] = s->shards_.size();
      s->shards_.push_back(std::move(shard));
      if (::ftruncate(fd, static_cast<off_t>(entry.bytes)) != 0) {
        return Status::IOError(Status::At(path.string(), std::string("cannot size: ") + std::strerror(errno)));
      }
    }
  }
  // What Cache::Open reads of each shard: the header, then the footer, then the index it points to. Not
  // pinned after: the reader keeps them in memory, and windows may evict their blocks.
  std::vector<FileRange> heads;
  for (const Shard& shard : s->shards_) {
    const std::string path = (s->dir_ / shard.name).string();
    heads.push_back({path, 0, kShardHeaderSize});
    heads.push_back({path, shard.size >= kShardFooterSize ? shard.size - kShardFooterSize : 0, shard.size});
  }
  uint64_t pin = 0;
  YC_RETURN_IF_ERROR(s->Fetch(heads, &pin).WithContext("the shards' headers and footers"));
  s->Unpin(pin);
  std::vector<FileRange> indexes;
  for (const Shard& shard : s->shards_) {
    if (shard.size < kShardFooterSize) continue;  // Cache::Open names the damage
    uint8_t footer_bytes[kShardFooterSize];
    if (::pread(shard.fd, footer_bytes, kShardFooterSize, static_cast<off_t>(shard.size - kShardFooterSize)) !=
        static_cast<ssize_t>(kShardFooterSize)) {
      return Status::IOError(Status::At((s->dir_ / shard.name).string(), "cannot read the footer back"));
    }
    ShardFooter footer;
    if (!ParseShardFooter(footer_bytes, shard.size, &footer).ok()) continue;  // Cache::Open names the damage
    indexes.push_back({(s->dir_ / shard.name).string(), footer.index_offset, shard.size});
  }
  YC_RETURN_IF_ERROR(s->Fetch(indexes, &pin).WithContext("the shards' indexes"));
  s->Unpin(pin);
  return s;
}

StreamCache::~StreamCache() {
  for (Shard& shard : shards_) ::close(shard.fd);
  std::error_code ec;
  for (const fs::path& p : created_) fs::remove(p, ec);
  fs::remove(dir_, ec);  // only when empty: nothing of anyone else's goes
}

uint64_t StreamCache::BlockLength(const Shard& s, size_t b) const {
  return std::min(o_.block_bytes, s.size - b * o_.block_bytes);
}

uint64_t StreamCache::DiskBytes(const Shard& s, size_t b) const {
  return (BlockLength(s, b) + kDiskUnit - 1) / kDiskUnit * kDiskUnit;
}

Status StreamCache::Fetch(const std::vector<FileRange>& ranges, uint64_t* pin) {
  std::lock_guard<std::mutex> one_at_a_time(fetch_mu_);
  std::vector<BlockRef> wanted, missing;
  uint64_t missing_bytes = 0, token = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::pair<size_t, size_t>> blocks;  // ranges may share a block
    for (const FileRange& r : ranges) {
      auto it = by_name_.find(fs::path(r.path).filename().string());
      if (it == by_name_.end()) return Status::InvalidArgument(Status::At(r.path, "not a shard of " + dir_.string()));
      const uint64_t end = std::min(r.end, shards_[it->second].size);
      for (uint64_t b = r.begin / o_.block_bytes; r.begin < end && b * o_.block_bytes < end; ++b) {
        blocks.insert({it->second, b});
      }
    }
    for (const auto& [shard, b] : blocks) {
      Pin({shard, b});
      wanted.push_back({shard, b});
      if (!shards_[shard].blocks[b].present) missing.push_back({shard, b}), missing_bytes += DiskBytes(shards_[shard], b);
    }
    token = next_pin_++;
    pins_[token] = wanted;
    Status room = Evict(missing_bytes);
    if (!room.ok()) {
      pins_.erase(token);
      for (const BlockRef& r : wanted) UnpinBlock(r);
      return room;
    }
    counters_.bytes_on_disk += missing_bytes;  // reserved; given back for what fails to come
    counters_.peak_bytes_on_disk = std::max(counters_.peak_bytes_on_disk, counters_.bytes_on_disk);
  }
  Status st = Download(missing);
  std::lock_guard<std::mutex> lock(mu_);
  ++tick_;
  for (const BlockRef& r : wanted) Touch(r);
  if (!st.ok()) {
    for (const BlockRef& r : pins_[token]) UnpinBlock(r);
    pins_.erase(token);
    return st;
  }
  *pin = token;
  return Status::OK();
}

void StreamCache::Unpin(uint64_t pin) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pins_.find(pin);
  if (it == pins_.end()) return;
  for (const BlockRef& r : it->second) UnpinBlock(r);
  pins_.erase(it);
}

void StreamCache::Pin(const BlockRef& r) {
  if (shards_[r.shard].blocks[r.block].pins++ == 0) pinned_bytes_ += DiskBytes(shards_[r.shard], r.block);
}

void StreamCache::UnpinBlock(const BlockRef& r) {
  if (--shards_[r.shard].blocks[r.block].pins == 0) pinned_bytes_ -= DiskBytes(shards_[r.shard], r.block);
}

void StreamCache::Touch(const BlockRef& r) {
  Block& b = shards_[r.shard].blocks[r.block];
  if (!b.present) return;
  lru_.erase({b.last_use, r.shard, r.block});
  b.last_use = tick_;
  lru_.insert({b.last_use, r.shard, r.block});
}

StreamCounters StreamCache::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

Status StreamCache::Evict(uint64_t bytes) {
  if (pinned_bytes_ > o_.budget_bytes) {
    return Status::ResourceExhausted(Status::At(store_.location().Display(),
                                                "a window needs " + Mib(pinned_bytes_) + " of local disk at once, more "
                                                "than --cache-budget " + Mib(o_.budget_bytes) +
                                                    " (a larger budget, or a smaller --window)"));
  }
  auto it = lru_.begin();
  while (counters_.bytes_on_disk + bytes > o_.budget_bytes && it != lru_.end()) {
    const auto [last_use, shard, block] = *it;
    Shard& victim = shards_[shard];
    if (victim.blocks[block].pins > 0) {  // in use: never evicted
      ++it;
      continue;
    }
    const uint64_t offset = block * o_.block_bytes, length = BlockLength(victim, block);
    if (::fallocate(victim.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(length)) != 0) {
      return Status::IOError(Status::At((dir_ / victim.name).string(),
                                        std::string("cannot evict a block (punching a hole): ") + std::strerror(errno)));
    }
    victim.blocks[block].present = false;
    counters_.bytes_on_disk -= DiskBytes(victim, block);
    counters_.bytes_evicted += length;
    it = lru_.erase(it);
  }
  return Status::OK();
}

Status StreamCache::Download(const std::vector<BlockRef>& missing) {
  // Consecutive missing blocks of one shard go in one GET of at most request_bytes.
  struct Request {
    size_t shard = 0, first = 0, count = 0;
    uint64_t offset = 0, length = 0;
  };
  std::vector<BlockRef> sorted = missing;
  std::sort(sorted.begin(), sorted.end(),
            [](const BlockRef& a, const BlockRef& b) { return a.shard != b.shard ? a.shard < b.shard : a.block < b.block; });
  std::vector<Request> requests;
  for (const BlockRef& r : sorted) {
    const uint64_t length = BlockLength(shards_[r.shard], r.block);
    Request* last = requests.empty() ? nullptr : &requests.back();
    if (last != nullptr && last->shard == r.shard && last->first + last->count == r.block &&
        last->length + length <= std::max(o_.request_bytes, o_.block_bytes)) {
      ++last->count, last->length += length;
    } else {
      requests.push_back({r.shard, r.block, 1, r.block * o_.block_bytes, length});
    }
  }
  std::atomic<size_t> next{0};
  std::mutex error_mu;
  Status first_error;
  auto work = [&] {
    std::vector<uint8_t> buffer;
    for (size_t i = next++; i < requests.size(); i = next++) {
      {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!first_error.ok()) return;
      }
      const Request& q = requests[i];
      Shard& s = shards_[q.shard];
      Status st = o_.cancel != nullptr && o_.cancel->load() ? Status::Cancelled("interrupted") : Status::OK();
      if (st.ok()) {
        buffer.resize(q.length);
        st = store_.Read(s.name, q.offset, q.length, buffer.data());
      }
      if (st.ok()) st = WriteAllAt(s.fd, buffer.data(), q.length, q.offset, (dir_ / s.name).string());
      std::lock_guard<std::mutex> lock(mu_);
      if (st.ok()) {
        for (size_t b = q.first; b < q.first + q.count; ++b) {
          s.blocks[b].present = true;
          lru_.insert({s.blocks[b].last_use, q.shard, b});
        }
        counters_.bytes_fetched += q.length;
        ++counters_.requests;
        continue;
      }
      // Nothing of a failed request is kept: a write that stopped half way is punched out again.
      ::fallocate(s.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(q.offset),
                  static_cast<off_t>(q.length));
      std::lock_guard<std::mutex> elock(error_mu);
      if (first_error.ok()) first_error = st;
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(o_.threads, static_cast<int>(requests.size())));
  for (int t = 0; t < n; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  // What did not come gives its reservation back.
  std::lock_guard<std::mutex> lock(mu_);
  for (const BlockRef& r : missing)
    if (!shards_[r.shard].blocks[r.block].present) counters_.bytes_on_disk -= DiskBytes(shards_[r.shard], r.block);
  return first_error;
}

Result<StreamedCache> OpenStreamedCache(const std::string& url, const StreamOptions& options) {
  YC_ASSIGN_OR_RETURN(ObjectLocation at, ParseObjectLocation(url));
  YC_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store, ObjectStore::Open(at));
  // The stream reads through the store for its whole life: both go together.
  struct Owned {
    std::unique_ptr<ObjectStore> store;
    std::unique_ptr<StreamCache> stream;
  };
  auto owned = std::make_shared<Owned>();
  owned->store = std::move(store);
  YC_ASSIGN_OR_RETURN(owned->stream, StreamCache::Open(*owned->store, options));
  StreamedCache out;
  out.stream = std::shared_ptr<StreamCache>(owned, owned->stream.get());
  OpenOptions open;
  open.verify_checksums = true;  // every read: a record fetched again after an eviction is checked again
  open.verify_first_read = false;
  YC_ASSIGN_OR_RETURN(std::unique_ptr<Cache> cache, Cache::Open(out.stream->dir(), open));
  out.cache = std::move(cache);
  return out;
}

}  // namespace yc
