// Byte layout of a shard file (docs/FORMAT.md, "Shard file"), shared by the writer, the reader and
// verify so that there is exactly one definition of every offset:
//
//   [header 64][record 0][pad][record 1][pad]...[record n-1][pad][index n x 24][footer 64]
//
// Records and the index start at multiples of 64. The header is fixed when the file is created and
// the counts live in the footer, so the whole-shard checksum (XXH3 over every byte before the
// footer) can be computed while streaming, as in LevelDB's table format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc {

inline constexpr char kShardMagic[8] = {'Y', 'C', 'S', 'H', 'A', 'R', 'D', '\0'};
inline constexpr char kShardFooterMagic[8] = {'Y', 'C', 'S', 'H', 'E', 'N', 'D', '\0'};
inline constexpr uint32_t kShardVersion = 1;
inline constexpr size_t kShardHeaderSize = 64;
inline constexpr size_t kShardFooterSize = 64;
inline constexpr size_t kShardIndexEntrySize = 24;
inline constexpr uint64_t kShardRecordAlignment = 64;  // >= a cache line; mmap keeps it in memory

struct ShardIndexEntry {
  uint64_t offset = 0;    // from the start of the file
  uint64_t size = 0;      // record bytes
  uint64_t checksum = 0;  // the record's own header checksum, repeated
};

struct ShardFooter {
  uint64_t index_offset = 0;
  uint64_t record_count = 0;
  uint64_t index_checksum = 0;  // XXH3 over the index bytes
  uint64_t shard_checksum = 0;  // XXH3 over file bytes [0, footer)
};

// The canonical 64-byte header of a version-1 shard.
void EncodeShardHeader(uint8_t* dst);
// Byte-exact comparison against the canonical header: any difference is a damaged header.
Status CheckShardHeader(const uint8_t* data, size_t size);

void EncodeShardFooter(const ShardFooter& footer, uint8_t* dst);
// Parses the last 64 bytes of a file of `file_size` bytes: magic, version, footer checksum, reserved
// bytes, and that the index lies exactly between the records and the footer.
Status ParseShardFooter(const uint8_t* footer, uint64_t file_size, ShardFooter* out);

void EncodeShardIndexEntry(const ShardIndexEntry& e, uint8_t* dst);
// Parses and checks the index: its checksum, then the canonical layout (record i starts at the
// first 64-byte boundary after record i-1, the index at the first boundary after the last record).
// `data` is the whole file. On failure *bad_entry names the first offending entry (or -1 for the
// index as a whole).
Status ParseShardIndex(const uint8_t* data, size_t size, const ShardFooter& footer,
                       std::vector<ShardIndexEntry>* out, int64_t* bad_entry = nullptr);

// Opens and validates header, footer and index of an in-memory shard image: the cheap checks done
// at open, and everything the fuzzer can reach before records are decoded.
Status ParseShardLayout(const uint8_t* data, size_t size, ShardFooter* footer, std::vector<ShardIndexEntry>* index);

}  // namespace yc
