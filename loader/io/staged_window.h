// One window's records held in the loader's own memory by the window stage (window_stage.h), served
// to the workers as a RecordSource.
//
//   StagedWindow w(source);
//   uint8_t* bytes = w.Reserve(total_bytes, window_bytes);  // stage thread: room for the stored bytes
//   w.Add(record, offset_in_bytes, length); ...              // where each record's stored bytes land
//   ... read the bytes into `bytes` ...
//   w.Seal(window_bytes);                                    // ready: workers may Read
//   w.Read(record, &view, &scratch);                         // workers, concurrently
//   w.Clear();                                               // every record from the source again
//
// Raw records are decoded in place (their pixels point into the stored bytes). A compressed record
// (zstd, or jpeg: a JPEG decode costs ~4 ms at 640 on one core) is decoded by the first worker that reads it and its pixels kept in a second
// buffer, the decoded arena, so the window's other samples that use it as a Mosaic or MixUp partner
// (about 3 more per epoch) do not decompress it again: on 2 cores decompression was what capped the
// windowed order on zstd shards. The arena holds at most `window_bytes` of pixels; records past that
// are decompressed on every read, as from the source. A record not in the window, or one whose header
// does not parse, is read from the source as usual, which reports any damage.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "libcache/record_source.h"

namespace yc {

class StagedWindow final : public RecordSource {
 public:
  explicit StagedWindow(const RecordSource* source) : source_(source) {}

  size_t size() const override { return source_->size(); }
  // Thread-safe between Seal and the next Clear/Reserve.
  Status Read(size_t index, RecordView* out, ScratchBuffer* scratch) const override;

  // Stage thread only, while no worker reads the window.
  void Clear() { entries_.clear(); }
  // The buffer for `bytes` of stored records, 4 KiB-aligned (O_DIRECT); grown only when too small, with
  // headroom over max(bytes, window_bytes), so a slot is allocated (and its pages faulted in) once.
  // nullptr when out of memory (the window is then read from the source).
  uint8_t* Reserve(uint64_t bytes, uint64_t window_bytes);
  void Add(uint64_t record, uint64_t offset, uint64_t length) { entries_.push_back(Entry{record, offset, length}); }
  // After the bytes are in: indexes the records and lays out the decoded arena (at most arena_bytes).
  void Seal(uint64_t arena_bytes);
  // Bytes allocated for this window's buffers (stored bytes and decoded arena).
  uint64_t allocated_bytes() const { return buffer_capacity_ + arena_capacity_; }

 private:
  static constexpr uint64_t kNoArena = ~uint64_t{0};
  struct Entry {
    uint64_t record = 0;
    uint64_t offset = 0, length = 0;  // the stored bytes in buffer_
    uint64_t arena = kNoArena;        // compressed records: where the decoded pixels and boxes go
    uint64_t pixel_bytes = 0;         // the header's raw pixel size and box count (arena records)
    uint64_t box_count = 0;
  };
  enum : uint8_t { kNotDecoded = 0, kDecoding = 1, kDecoded = 2 };
  struct FreeBuffer {
    void operator()(uint8_t* p) const;
  };
  // Keeps record k's decoded view in the arena (the first reader of k does this; others decode alone).
  void Keep(size_t k, const RecordView& view) const;

  const RecordSource* source_;
  std::vector<Entry> entries_;  // sorted by record after Seal
  std::unique_ptr<uint8_t, FreeBuffer> buffer_, arena_;
  uint64_t buffer_capacity_ = 0, arena_capacity_ = 0;
  // Per entry: its decoded state and view (arena records only).
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
  size_t state_capacity_ = 0;
  mutable std::vector<RecordView> views_;
};

}  // namespace yc
