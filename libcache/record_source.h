// The read side of a built cache, as the loader sees it: N records, each a pre-decoded RGB image
// (long side = the cache's imgsz) with its boxes. Implemented by the shard and LMDB readers
// (cache.h), and by in-memory sources in tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "libcache/box.h"
#include "libcache/status.h"

namespace yc {

// A view of one record. For uncompressed caches the pointers point straight into the mmap'd shard
// (zero copy); for compressed ones into the caller's scratch buffer. Valid while the source is open
// and the scratch buffer is neither reused nor destroyed.
struct RecordView {
  uint64_t index = 0;               // position within its split
  const uint8_t* pixels = nullptr;  // HWC, RGB, uint8, rows contiguous (stride = width * channels)
  int height = 0, width = 0, channels = 3;
  int orig_height = 0, orig_width = 0;  // source image size after EXIF orientation
  const Box* boxes = nullptr;
  size_t box_count = 0;
  std::string_view source;  // source image path relative to the dataset root
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
};

}  // namespace yc
