#include "trainer/config/sample_order.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace yc::trainer {

namespace {
std::string Gib(uint64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return s;
}
}  // namespace

Result<uint64_t> MemAvailableBytes(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(Status::At(path, "cannot read"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    uint64_t kib = 0;
    if (fields >> key >> kib >> unit && key == "MemAvailable:") return kib * 1024;
  }
  return Status::NotFound(Status::At(path, "no MemAvailable line"));
}

Result<uint64_t> PageCacheBudget(double ram_budget_gb, const std::string& meminfo_path) {
  if (ram_budget_gb > 0) return static_cast<uint64_t>(ram_budget_gb * (1ull << 30));
  YC_ASSIGN_OR_RETURN(uint64_t available, MemAvailableBytes(meminfo_path));
  return available > kProcessMargin ? available - kProcessMargin : 0;
}

OrderChoice ChooseSampleOrder(const TrainOptions& o, uint64_t data_bytes, uint64_t budget, bool compressed) {
  OrderChoice c;
  const std::string sizes = "train data " + Gib(data_bytes) + ", page-cache budget " + Gib(budget);
  if (o.order == "auto" && o.rect) {
    c.order = "shuffle";  // the loader's default order; rect batches then walk it in aspect-ratio order
    c.reason = "order: shuffle (auto: rect=True batches go in aspect-ratio order; " + sizes + ")";
  } else if (o.order == "auto") {
    c.order = data_bytes > budget ? "windowed" : "shuffle";
    c.reason = "order: " + c.order + " (auto: " + sizes +
               (c.order == "windowed" ? "; the cache does not fit, so each epoch reads it once, window by window)"
                                      : "; the cache fits in memory)");
  } else {
    c.order = o.order;
    c.reason = "order: " + c.order + " (--order; " + sizes + ")";
  }
  if (c.order == "windowed") {
    const uint64_t share = compressed ? 8 : 4;
    c.window_mb = o.window_mb > 0 ? o.window_mb
                                  : static_cast<double>(std::max(kMinWindow, budget / share)) / (1ull << 20);
    char w[96];
    std::snprintf(w, sizeof w, ", window %.0f MiB%s", c.window_mb,
                  o.window_mb > 0 ? ""
                  : compressed    ? " (budget / 8: compressed records are also kept decoded)"
                                  : " (budget / 4)");
    c.reason += w;
  } else {
    c.window_mb = o.window_mb;
  }
  return c;
}

}  // namespace yc::trainer
