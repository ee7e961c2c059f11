// libFuzzer target for everything that parses cache bytes: the shard layout (header, footer, index),
// the record decoder behind ShardReader::Read, and VerifyShardBytes. Any bytes in, a Status out, no
// read outside the buffer (the input is copied to an exact-size heap block for ASan).
//
// The first input byte picks a mode, so the fuzzer also gets past the checksums it cannot forge:
//   0: the bytes as a shard file, untouched;
//   1: the bytes as a shard file with header, index, shard and footer checksums repaired;
//   2: the bytes as one record, untouched and with its record checksum repaired.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/format/record_format.h"
#include "libcache/format/shard_format.h"
#include "libcache/store/shard_reader.h"
#include "libcache/verify/shard_verify.h"

namespace {

void ReadAll(const uint8_t* d, size_t size) {
  for (bool verify : {false, true}) {
    yc::ShardReaderOptions options;
    options.verify_checksums = verify;
    auto reader = yc::ShardReader::OpenBuffer(d, size, "fuzz.shard", options);
    if (!reader.ok()) {
      if (reader.status().code() != yc::Status::Code::kCorruption) std::abort();
      continue;
    }
    yc::ScratchBuffer scratch;
    for (size_t i = 0; i < reader.value()->size(); ++i) {
      yc::RecordView v;
      if (reader.value()->Read(i, &v, &scratch).ok()) {
        // A record that decodes must describe bytes we can touch.
        volatile uint8_t sink = v.pixels[static_cast<size_t>(v.height) * v.width * v.channels - 1];
        (void)sink;
        if (v.box_count > 0) sink = static_cast<uint8_t>(v.boxes[v.box_count - 1].cls);
        if (!v.source.empty()) sink = static_cast<uint8_t>(v.source.back());
      }
    }
  }
  const yc::ShardVerifyResult r = yc::VerifyShardBytes(d, size);
  if (r.ok() && r.computed_checksum != r.stored_checksum) std::abort();
}

// Rewrites the checksums a shard writer would have computed, wherever the layout allows.
void RepairShard(uint8_t* d, size_t size) {
  if (size < yc::kShardHeaderSize + yc::kShardFooterSize) return;
  yc::EncodeShardHeader(d);
  uint8_t* footer = d + size - yc::kShardFooterSize;
  yc::ShardFooter f;
  f.index_offset = yc::DecodeFixed64(footer);
  f.record_count = yc::DecodeFixed64(footer + 8);
  const uint64_t footer_offset = size - yc::kShardFooterSize;
  if (f.index_offset <= footer_offset && f.record_count <= (footer_offset - f.index_offset) / yc::kShardIndexEntrySize)
    f.index_checksum = XXH3_64bits(d + f.index_offset, f.record_count * yc::kShardIndexEntrySize);
  f.shard_checksum = XXH3_64bits(d, footer_offset);
  yc::EncodeShardFooter(f, footer);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size > 0) std::memcpy(copy.get(), data, size);
  uint8_t* d = copy.get();

  if (mode == 0) {
    ReadAll(d, size);
  } else if (mode == 1) {
    RepairShard(d, size);
    ReadAll(d, size);
  } else {
    yc::ScratchBuffer scratch;
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1 && size >= yc::kRecordHeaderSize)
        yc::EncodeFixed64(d + yc::kRecordChecksumOffset, yc::ComputeRecordChecksum(d, size));
      for (bool verify : {false, true}) {
        yc::RecordView v;
        const yc::Status s = yc::DecodeRecord(d, size, verify, &v, &scratch);
        if (!s.ok() && s.code() != yc::Status::Code::kCorruption) std::abort();
        if (s.ok() && static_cast<size_t>(v.height) * v.width * v.channels == 0) std::abort();
      }
      (void)yc::RecordSourcePath(d, size);
    }
  }
  return 0;
}
