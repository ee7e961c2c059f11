#include "tools/yolocache/order_stats_report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

namespace yc::cli {

namespace {

// A bar of `share / full` x `width` cells, in eighths of a cell (U+2588..U+258F).
std::string Bar(double share, double full, int width) {
  static const char* kEighths[] = {"", "\u258F", "\u258E", "\u258D", "\u258C", "\u258B", "\u258A", "\u2589"};
  const int eighths = full > 0 ? static_cast<int>(share / full * width * 8 + 0.5) : 0;
  std::string s;
  for (int i = 0; i < eighths / 8; ++i) s += "\u2588";
  s += kEighths[eighths % 8];
  return s;
}

}  // namespace

void PrintOrderStats(const OrderStats& a, const OrderStats& b, const OrderStats& noise, size_t top) {
  std::printf("augmentation statistics: shuffle (S, %llu samples) vs windowed (W, %llu samples, %zu windows an epoch)\n",
              static_cast<unsigned long long>(a.samples), static_cast<unsigned long long>(b.samples), b.windows);
  for (size_t k = 0; k < std::min(a.histograms.size(), b.histograms.size()); ++k) {
    const OrderHistogram& ha = a.histograms[k];
    const OrderHistogram& hb = b.histograms[k];
    const std::vector<double> p = ha.Shares(), q = hb.Shares();
    std::vector<size_t> shown(p.size());
    std::iota(shown.begin(), shown.end(), size_t{0});
    shown.erase(std::remove_if(shown.begin(), shown.end(), [&](size_t i) { return p[i] == 0 && q[i] == 0; }),
                shown.end());
    if (shown.size() > top) {  // the largest bins under shuffle, in bin order
      std::partial_sort(shown.begin(), shown.begin() + top, shown.end(),
                        [&](size_t i, size_t j) { return p[i] > p[j]; });
      shown.resize(top);
      std::sort(shown.begin(), shown.end());
    }
    double full = 0;
    for (size_t i : shown) full = std::max({full, p[i], q[i]});
    const double floor = k < noise.histograms.size() ? ha.TotalVariation(noise.histograms[k]) : 0;
    std::printf("\n%s: total variation S-W %.3f (S vs S with another seed: %.3f)", ha.name.c_str(),
                ha.TotalVariation(hb), floor);
    if (ha.mean > 0 || hb.mean > 0) std::printf(", mean S %.2f W %.2f", ha.mean, hb.mean);
    if (shown.size() < ha.bins.size()) std::printf(" [%zu of %zu bins shown]", shown.size(), ha.bins.size());
    std::printf("\n");
    for (size_t i : shown) {
      std::printf("  %8s S %5.1f%% %s\n", ha.bins[i].c_str(), 100 * p[i], Bar(p[i], full, 40).c_str());
      std::printf("  %8s W %5.1f%% %s\n", "", 100 * q[i], Bar(q[i], full, 40).c_str());
    }
  }
}

nlohmann::ordered_json OrderStatsJson(const OrderStats& a, const OrderStats& b, const OrderStats& noise) {
  nlohmann::ordered_json j;
  j["shuffle_samples"] = a.samples;
  j["windowed_samples"] = b.samples;
  j["windows_per_epoch"] = b.windows;
  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  for (size_t k = 0; k < std::min(a.histograms.size(), b.histograms.size()); ++k)
    stats.push_back({{"name", a.histograms[k].name},
                     {"bins", a.histograms[k].bins},
                     {"shuffle", a.histograms[k].Shares()},
                     {"windowed", b.histograms[k].Shares()},
                     {"mean_shuffle", a.histograms[k].mean},
                     {"mean_windowed", b.histograms[k].mean},
                     {"total_variation", a.histograms[k].TotalVariation(b.histograms[k])},
                     {"total_variation_shuffle_other_seed",
                      k < noise.histograms.size() ? a.histograms[k].TotalVariation(noise.histograms[k]) : 0.0}});
  j["statistics"] = stats;
  return j;
}

}  // namespace yc::cli
