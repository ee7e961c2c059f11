// What each rank's stream fetched over a --cache-budget run (libcache/build/stream_cache.h), gathered
// onto every rank so that rank 0, the one that logs, can say it per rank: with the windows dealt to the
// ranks (loader/order/window_deal.h) each should have fetched about 1/N of what one process would.
//
//   YC_ASSIGN_OR_RETURN(std::vector<RankFetched> ranks, GatherFetched(dist, stream.counters(), images));
//   for (const std::string& line : FetchedLines(ranks)) Say(line);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "libcache/build/stream_cache.h"
#include "trainer/distributed/distributed.h"

namespace yc::trainer {

struct RankFetched {
  uint64_t bytes = 0;     // shard bytes fetched over the network (the val split's included)
  uint64_t requests = 0;  // ranged GETs
  uint64_t samples = 0;   // train samples this rank ran in the session
};

// Every rank's figures, index = rank (a collective: every rank calls it at the same point).
Result<std::vector<RankFetched>> GatherFetched(DistContext& dist, const StreamCounters& mine, uint64_t samples);

// "stream: rank 0 fetched 61.2 MB in 58 GETs, 0.213 MB per sample (288 samples)", one per rank, then the total.
std::vector<std::string> FetchedLines(const std::vector<RankFetched>& ranks);

}  // namespace yc::trainer
