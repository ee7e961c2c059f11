// One bit per record of a reader: set once the record has passed its checksum in this process, so a
// reader opened with `verify_first_read` hashes each record on its first Read only and later epochs
// cost one relaxed load per record:
//
//   VerifiedBits bits(reader_size);
//   const bool hash = !bits.Test(i);           // first read of record i in this process?
//   ... DecodeRecord(..., hash, ...) ...; if (ok && hash) bits.Set(i);
//
// Thread-safe: two threads reading one record for the first time at once both hash it, which is
// harmless; a bit is never cleared. A record is only as verified as its bytes were when hashed: the
// mapping is read-only and caches are immutable once built.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace yc {

class VerifiedBits {
 public:
  explicit VerifiedBits(size_t records) : words_(new std::atomic<uint64_t>[(records + 63) / 64]) {
    for (size_t w = 0; w < (records + 63) / 64; ++w) words_[w].store(0, std::memory_order_relaxed);
  }
  bool Test(size_t i) const { return (words_[i >> 6].load(std::memory_order_relaxed) >> (i & 63)) & 1; }
  void Set(size_t i) { words_[i >> 6].fetch_or(uint64_t{1} << (i & 63), std::memory_order_relaxed); }

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

}  // namespace yc
