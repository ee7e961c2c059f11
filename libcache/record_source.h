// The read side of a built cache, as the loader sees it: N records, each a pre-decoded RGB image
// (long side = the cache's imgsz) with its boxes. Implemented by the shard and LMDB readers
// (cache.h), and by in-memory sources in tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "libcache/base/box.h"

namespace yc {

// A view of one record. For uncompressed caches the pointers point straight into the mmap'd shard
// (zero copy); for compressed ones (zstd, jpeg) into the caller's scratch buffer. Valid while the source is open
// and the scratch buffer is neither reused nor destroyed.
struct RecordView {
  uint64_t index = 0;               // position within its split
  const uint8_t* pixels = nullptr;  // HWC, RGB, uint8, rows contiguous (stride = width * channels)
  int height = 0, width = 0, channels = 3;
  int orig_height = 0, orig_width = 0;  // source image size after EXIF orientation
  const Box* boxes = nullptr;
  size_t box_count = 0;
  std::string_view source;  // source image path relative to the dataset root
  // JPEG records: the stored stream the pixels were decoded from (build --update keeps it as is).
  const uint8_t* jpeg = nullptr;
  size_t jpeg_bytes = 0;
};

// Where a record's bytes lie among its source's data files, for read-ahead and for the windowed
// order (caches larger than RAM). `file` numbers the source's data files 0..files()-1 (the shards of
// a split in order; LMDB's one data.mdb); `offset` and `length` are bytes within that file.
struct RecordExtent {
  uint32_t file = 0;
  uint64_t offset = 0, length = 0;
};

// Reusable per-thread buffer for decompression; keeps the hot path allocation-free once warm.
using ScratchBuffer = std::vector<uint8_t>;

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual size_t size() const = 0;
  // Thread-safe: many threads may Read concurrently, each with its own scratch buffer.
  // A checksum mismatch or malformed record is a Corruption status naming the record and file.
  virtual Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const = 0;

  // --- For caches larger than RAM (all optional: an in-memory source keeps the defaults) ---
  // Fills *out with record `index`'s bytes on disk; false when the source is not file-backed or the
  // index is out of range. Cheap (no record bytes are touched), thread-safe.
  virtual bool Extent(size_t index, RecordExtent* out) const { return false; }
  // Asks the kernel to start reading record `index` into the page cache and returns at once: a hint
  // that never changes what Read returns. The stored bytes (compressed ones for zstd shards).
  void WillNeed(size_t index) const {
    RecordExtent e;
    if (Extent(index, &e)) WillNeedRange(e);
  }
  // The same for any byte range of one data file (the loader's read-ahead merges adjacent records'
  // extents into one range); clamped to the file, ignored when out of range. Thread-safe. The loader's
  // read-ahead calls it from many threads of its own, which keeps enough requests in flight to keep
  // the disk busy (docs/LOADER.md, "Read-ahead").
  virtual void WillNeedRange(const RecordExtent& range) const {}
  // Evicts this source's data files from the page cache (posix_fadvise DONTNEED), so a benchmark can
  // start cold without root. Pages another process maps or dirty pages may stay.
  virtual Status DropCachedPages() const { return Status::OK(); }
  // Total bytes of the source's data files (0 when not file-backed).
  virtual uint64_t data_bytes() const { return 0; }
  // The path of data file `file` (Extent's numbering), for a reader that bypasses the source's
  // mapping (the windowed order's O_DIRECT stage, loader/io/window_stage.h); empty when not file-backed.
  virtual std::string DataFilePath(uint32_t file) const { return {}; }
  // Read, but from a copy of the record's stored bytes (exactly the `length` bytes Extent names, read
  // by the caller) instead of the source's own mapping: the same checks (checksums as configured, the
  // index's copy of the checksum) and the same view, its pixels pointing into `stored` (raw records)
  // or `scratch` (compressed). Valid while `stored` is. Sources without extents just Read.
  virtual Status ReadStored(size_t index, const uint8_t* stored, RecordView* out, ScratchBuffer* scratch) const {
    return Read(index, out, scratch);
  }
};

}  // namespace yc
