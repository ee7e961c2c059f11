#include "libcache/verify/shard_verify.h"

#include <atomic>
#include <optional>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <xxhash.h>

#include "libcache/base/coding.h"
#include "libcache/base/mapped_file.h"
#include "libcache/format/record_format.h"
#include "libcache/format/shard_format.h"

namespace yc {
namespace {

std::string StripPrefix(std::string message, const std::string& prefix) {
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

ShardProblem Problem(ShardProblem::Where where, const std::string& message, int64_t record = -1) {
  ShardProblem p;
  p.where = where;
  p.record = record;
  p.message = message;
  return p;
}

}  // namespace

const char* ShardProblemWhereName(ShardProblem::Where where) {
  switch (where) {
    case ShardProblem::Where::kFile: return "file";
    case ShardProblem::Where::kHeader: return "header";
    case ShardProblem::Where::kFooter: return "footer";
    case ShardProblem::Where::kIndex: return "index";
    case ShardProblem::Where::kRecord: return "record";
    case ShardProblem::Where::kPadding: return "padding";
  }
  return "file";
}

ShardVerifyResult VerifyShardBytes(const uint8_t* data, size_t size, const RecordLimits& limits) {
  ShardVerifyResult result;
  if (size < kShardHeaderSize + kShardFooterSize) {
    result.problems.push_back(Problem(ShardProblem::Where::kFile,
                                      "file too short for a shard (" + std::to_string(size) + " bytes)"));
    return result;
  }
  const uint64_t footer_offset = size - kShardFooterSize;
  Status s = CheckShardHeader(data, size);
  if (!s.ok()) result.problems.push_back(Problem(ShardProblem::Where::kHeader, StripPrefix(s.message(), "header: ")));

  ShardFooter footer;
  s = ParseShardFooter(data + footer_offset, size, &footer);
  if (!s.ok()) {
    // Without a footer there is no index to find records by; the header verdict stands alone.
    result.problems.push_back(Problem(ShardProblem::Where::kFooter, StripPrefix(s.message(), "footer: ")));
    return result;
  }
  result.records = footer.record_count;
  result.stored_checksum = footer.shard_checksum;

  std::vector<ShardIndexEntry> index;
  int64_t bad_entry = -1;
  s = ParseShardIndex(data, size, footer, &index, &bad_entry);
  if (!s.ok()) {
    result.problems.push_back(Problem(ShardProblem::Where::kIndex, StripPrefix(s.message(), "index: ")));
    return result;
  }

  std::vector<std::optional<ShardProblem>> record_problems(index.size());
  std::vector<std::optional<ShardProblem>> padding_problems(index.size());
  tbb::enumerable_thread_specific<ScratchBuffer> scratch;
  std::atomic<uint64_t> boxes{0}, backgrounds{0};
  auto check_records = [&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, index.size()), [&](const tbb::blocked_range<size_t>& r) {
      ScratchBuffer& buf = scratch.local();
      uint64_t range_boxes = 0, range_backgrounds = 0;
      for (size_t i = r.begin(); i != r.end(); ++i) {
        const ShardIndexEntry& e = index[i];
        const uint8_t* rec = data + e.offset;
        RecordView view;
        Status st = DecodeRecord(rec, e.size, /*verify_checksum=*/true, &view, &buf, limits);
        std::string message;
        if (!st.ok()) {
          message = StripPrefix(st.message(), "record: ");
        } else {
          range_boxes += view.box_count;
          range_backgrounds += view.box_count == 0;
          if (DecodeFixed64(rec + kRecordChecksumOffset) != e.checksum) message = "checksum differs from the index's copy";
        }
        if (!message.empty()) {
          ShardProblem p = Problem(ShardProblem::Where::kRecord, message, static_cast<int64_t>(i));
          p.source = std::string(RecordSourcePath(rec, e.size));
          record_problems[i] = std::move(p);
        }
        // Padding up to the next 64-byte boundary must be zero (it is covered by the shard checksum;
        // checking it here lets a flip there be named).
        const uint64_t end = e.offset + e.size;
        for (uint64_t b = end; b < AlignUp(end, kShardRecordAlignment); ++b) {
          if (data[b] != 0) {
            padding_problems[i] = Problem(ShardProblem::Where::kPadding,
                                          "non-zero padding byte at offset " + std::to_string(b) + " after record " +
                                              std::to_string(i),
                                          static_cast<int64_t>(i));
            break;
          }
        }
      }
      boxes += range_boxes;
      backgrounds += range_backgrounds;
    });
  };
  auto hash_shard = [&] { result.computed_checksum = XXH3_64bits(data, footer_offset); };
  tbb::parallel_invoke(check_records, hash_shard);
  result.boxes = boxes.load();
  result.backgrounds = backgrounds.load();

  for (size_t i = 0; i < index.size(); ++i) {
    if (record_problems[i]) result.problems.push_back(std::move(*record_problems[i]));
    if (padding_problems[i]) result.problems.push_back(std::move(*padding_problems[i]));
  }
  // Every byte before the footer belongs to the header, a record, padding or the index, each checked
  // above; a mismatch nobody claimed would mean the footer's checksum field itself is wrong, which
  // the footer checksum already excludes. Reported anyway rather than assumed impossible.
  if (result.computed_checksum != footer.shard_checksum && result.problems.empty()) {
    result.problems.push_back(Problem(ShardProblem::Where::kFile,
                                      "shard checksum mismatch (stored " + ChecksumToHex(footer.shard_checksum) +
                                          ", computed " + ChecksumToHex(result.computed_checksum) + ")"));
  }
  return result;
}

ShardVerifyResult VerifyShard(const std::filesystem::path& path, const RecordLimits& limits) {
  auto file = MappedFile::Open(path, AccessAdvice::kSequential);
  if (!file.ok()) {
    ShardVerifyResult result;
    result.problems.push_back(Problem(ShardProblem::Where::kFile, file.status().message()));
    return result;
  }
  return VerifyShardBytes(file.value()->data(), file.value()->size(), limits);
}

}  // namespace yc
