#include "trainer/engine/stream_report.h"

#include <cstdio>

namespace yc::trainer {

Result<std::vector<RankFetched>> GatherFetched(DistContext& dist, const StreamCounters& mine, uint64_t samples) {
  const int ranks = dist.world_size();
  // Each rank fills its own row of a zero table; a sum gives every rank the whole table. Doubles hold the
  // byte counts exactly up to 2^53 (8 PiB).
  at::Tensor table = at::zeros({ranks, 3}, at::TensorOptions().dtype(at::kDouble));
  table[dist.rank()][0] = static_cast<double>(mine.bytes_fetched);
  table[dist.rank()][1] = static_cast<double>(mine.requests);
  table[dist.rank()][2] = static_cast<double>(samples);
  if (dist.distributed()) YC_RETURN_IF_ERROR(dist.AllReduce(table, ReduceKind::kSum));
  std::vector<RankFetched> out(static_cast<size_t>(ranks));
  const at::Tensor host = table.to(at::kCPU).contiguous();
  const double* v = host.data_ptr<double>();
  for (int r = 0; r < ranks; ++r) {
    out[r].bytes = static_cast<uint64_t>(v[3 * r]);
    out[r].requests = static_cast<uint64_t>(v[3 * r + 1]);
    out[r].samples = static_cast<uint64_t>(v[3 * r + 2]);
  }
  return out;
}

namespace {

std::string Line(const std::string& who, const RankFetched& f) {
  char text[192];
  std::snprintf(text, sizeof text, "stream: %s fetched %.1f MB in %llu GETs, %.3f MB per sample (%llu samples)",
                who.c_str(), f.bytes / 1e6, static_cast<unsigned long long>(f.requests),
                f.samples > 0 ? f.bytes / 1e6 / static_cast<double>(f.samples) : 0.0,
                static_cast<unsigned long long>(f.samples));
  return text;
}

}  // namespace

std::vector<std::string> FetchedLines(const std::vector<RankFetched>& ranks) {
  std::vector<std::string> lines;
  RankFetched total;
  for (size_t r = 0; r < ranks.size(); ++r) {
    lines.push_back(Line("rank " + std::to_string(r), ranks[r]));
    total.bytes += ranks[r].bytes;
    total.requests += ranks[r].requests;
    total.samples += ranks[r].samples;
  }
  if (ranks.size() > 1) lines.push_back(Line("all " + std::to_string(ranks.size()) + " ranks", total));
  return lines;
}

}  // namespace yc::trainer
