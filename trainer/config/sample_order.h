// Which train sampling order a run uses (--order auto|shuffle|windowed), decided once at start-up
// from the cache's size and the memory the run may give the page cache, and said in the log.
//
//   Result<OrderChoice> c = ChooseSampleOrder(options, train->data_bytes());
//   options.order = c->order; options.window_mb = c->window_mb;  // stored: --resume keeps it
//   Say(c->reason);
//
// auto picks windowed when the train split's data files exceed the page-cache budget: then the
// default shuffle would fault each record in from disk at random (issue 17: 10-15x slower), while the
// windowed order reads each record once per epoch, sequentially. The budget is --ram-budget GB, else
// MemAvailable (/proc/meminfo: free memory plus the reclaimable page cache) less kProcessMargin for the
// process itself (model, optimizer, batch pools, pinned buffers).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "trainer/config/train_options.h"

namespace yc::trainer {

inline constexpr uint64_t kProcessMargin = 4ull << 30;  // 4 GiB
inline constexpr uint64_t kMinWindow = 256ull << 20;    // 256 MiB

struct OrderChoice {
  std::string order;     // "shuffle" | "windowed"
  double window_mb = 0;  // windowed: the window, MiB
  std::string reason;    // one line for the log
};

// MemAvailable from `meminfo` (the /proc/meminfo format), in bytes; NotFound when absent.
Result<uint64_t> MemAvailableBytes(const std::string& meminfo_path = "/proc/meminfo");

// The page-cache budget (bytes): ram_budget_gb when > 0, else MemAvailable - kProcessMargin (>= 0).
Result<uint64_t> PageCacheBudget(double ram_budget_gb, const std::string& meminfo_path = "/proc/meminfo");

// Resolves options.order ("auto" compares data_bytes with `budget`) and options.window_mb (0: a quarter
// of the budget, at least kMinWindow: the window being read plus the next one read ahead stay within
// half the budget, leaving the rest to the process's other pages and to LRU slack). `compressed`
// (zstd or jpeg records): an eighth, since the window stage also keeps up to a window of decompressed
// records per slot (loader/io/staged_window.h), so its two slots take about twice a raw cache's memory.
OrderChoice ChooseSampleOrder(const TrainOptions& options, uint64_t data_bytes, uint64_t budget,
                              bool compressed = false);

}  // namespace yc::trainer
