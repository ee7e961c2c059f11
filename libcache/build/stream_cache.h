// A cache in object storage streamed window by window into a local disk cache bounded by a budget
// (`yolocache bench URL --cache-budget GB`; docs/REMOTE.md, "Streaming"), for a cache larger than the
// local disk. The folder <cache root>/stream/<name as pull_cache.h names it> opens with Cache::Open like
// any cache (manifest.json, audit.json, every shard at its full size), but the shards are sparse files
// holding only the blocks fetched so far. Open fetches the manifest, audit.json and each shard's header,
// index and footer (what Cache::Open reads); the records come when the loader's window stage asks for a
// window's byte ranges (Fetch, the RangeFetcher hook), in parallel ranged GETs, and stay on disk while
// the bytes there fit the budget: then the least recently used block nobody has pinned is evicted (its
// hole punched). A block being read (pinned) is never evicted; ranges that cannot fit next to the pinned
// ones are refused naming the sizes. Records are not checked here: open the folder with
// OpenOptions::verify_checksums, so every record read is hashed against its checksum after the download
// and a damaged object fails naming the record and the shard, as in a local cache.
//
//   StreamOptions o;  o.cache_root = DefaultCacheRoot();  o.budget_bytes = 20ull << 30;
//   Result<std::unique_ptr<StreamCache>> s = StreamCache::Open(store, o);
//   Cache::Open((*s)->dir(), verify_every_read);  loader_options.fetcher = std::move(*s);
//
// Shard caches only: an LMDB cache (one data.mdb) is refused (fetch it whole: --data without a budget).
// The folder is the stream's own: its files are removed when the StreamCache goes, and one left by a
// killed run (only cache files in it) is replaced at the next Open.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "libcache/base/range_fetcher.h"
#include "libcache/remote/object_store.h"

namespace yc {

struct StreamOptions {
  std::filesystem::path cache_root;       // required
  uint64_t budget_bytes = 0;              // required: the most bytes of shards kept on disk
  uint64_t window_bytes = 0;              // the loader's window: a budget below it is refused before any byte
  int threads = 8;                        // ranged GETs in flight
  // The unit fetched, kept and evicted; 0: window_bytes / 64 within [64 KiB, 1 MiB], so that the runs
  // of records a window is made of (window_bytes / 8 each, window_order.h) fetch little beside them.
  uint64_t block_bytes = 0;
  uint64_t request_bytes = uint64_t{8} << 20;  // the most one GET asks for (consecutive missing blocks)
  const std::atomic<bool>* cancel = nullptr;   // set: Fetch stops with Cancelled
  // Data-parallel ranks each stream their own share of the windows (loader/order/window_deal.h) into a
  // folder of their own, so that ranks sharing a disk never replace each other's files.
  int rank = 0, world_size = 1;
};

struct StreamCounters {
  uint64_t bytes_fetched = 0;  // shard bytes that came over the network, metadata included
  uint64_t bytes_evicted = 0;
  uint64_t bytes_on_disk = 0, peak_bytes_on_disk = 0;  // in whole 4 KiB filesystem blocks
  uint64_t requests = 0;
};

// Where StreamCache keeps the stream of `at` under `cache_root`: <name as pull_cache.h names it>, with
// `-rank<R>of<N>` appended for rank R of N > 1.
std::filesystem::path StreamedCachePath(const std::filesystem::path& cache_root, const ObjectLocation& at,
                                        int rank = 0, int world_size = 1);

class StreamCache final : public RangeFetcher {
 public:
  // Refused before any byte: a budget smaller than one window. Before any shard byte: an LMDB cache, a
  // budget larger than the disk's free space, one the shards' metadata blocks do not fit in
  // (ResourceExhausted naming the sizes).
  // `store` must outlive the StreamCache.
  static Result<std::unique_ptr<StreamCache>> Open(const ObjectStore& store, const StreamOptions& options);
  ~StreamCache() override;
  StreamCache(const StreamCache&) = delete;
  StreamCache& operator=(const StreamCache&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // One caller at a time (the window stage's thread); Unpin from any thread.
  Status Fetch(const std::vector<FileRange>& ranges, uint64_t* pin) override;
  void Unpin(uint64_t pin) override;
  StreamCounters counters() const;

 private:
  struct Block {
    bool present = false;
    uint32_t pins = 0;
    uint64_t last_use = 0;
  };
  struct Shard {
    std::string name;
    uint64_t size = 0;
    int fd = -1;
    std::vector<Block> blocks;
  };
  struct BlockRef {
    size_t shard = 0, block = 0;
  };
  StreamCache(const ObjectStore& store, StreamOptions options) : store_(store), o_(std::move(options)) {}
  uint64_t BlockLength(const Shard& s, size_t b) const;
  // What a block takes on disk, which the budget counts: its length in whole filesystem blocks (a
  // shard's last block is shorter).
  uint64_t DiskBytes(const Shard& s, size_t b) const;
  static constexpr uint64_t kDiskUnit = 4096;
  // Fetches `missing` (absent, reserved) blocks; marks those that came over present. Outside mu_.
  Status Download(const std::vector<BlockRef>& missing);
  // Makes room for `bytes` more on disk by evicting unpinned blocks, least recently used first.
  Status Evict(uint64_t bytes);
  void Pin(const BlockRef& r);
  void UnpinBlock(const BlockRef& r);
  void Touch(const BlockRef& r);  // a present block was used now

  const ObjectStore& store_;
  StreamOptions o_;
  std::filesystem::path dir_;
  std::vector<std::filesystem::path> created_;  // removed by the destructor
  std::vector<Shard> shards_;
  std::map<std::string, size_t> by_name_;
  std::mutex fetch_mu_;        // one Fetch at a time
  mutable std::mutex mu_;      // blocks, pins, counters
  std::map<uint64_t, std::vector<BlockRef>> pins_;
  std::set<std::tuple<uint64_t, size_t, size_t>> lru_;  // present blocks: (last use, shard, block)
  uint64_t pinned_bytes_ = 0;
  uint64_t next_pin_ = 1, tick_ = 0;
  StreamCounters counters_;
};

// A URL (s3://, http(s)://) opened as a stream, with its Cache opened on the folder so that every record
// read is checked against its checksum: what `bench URL --cache-budget` reads. Keys and endpoint as
// ObjectStore::Open finds them.
class Cache;
struct StreamedCache {
  std::shared_ptr<StreamCache> stream;  // for LoaderOptions::fetcher; outlives `cache`'s readers
  std::shared_ptr<Cache> cache;
};
Result<StreamedCache> OpenStreamedCache(const std::string& url, const StreamOptions& options);

}  // namespace yc
