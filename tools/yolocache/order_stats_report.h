// `yolocache bench --order-stats N`: the augmentation statistics of the default shuffle and the
// windowed order side by side, as text bar charts, with the total-variation distance per statistic.
#pragma once

#include <nlohmann/json.hpp>

#include "loader/measure/order_stats.h"

namespace yc::cli {

// Prints each statistic's non-empty bins as two bars (shuffle, windowed) and the total-variation
// distance between them, beside the distance between shuffle and shuffle with another seed (`noise`:
// how far two equally good orders land from each other on this many samples). `top` caps the bins
// shown for histograms with many (the class shares: the largest shares under shuffle).
void PrintOrderStats(const OrderStats& shuffle, const OrderStats& windowed, const OrderStats& noise, size_t top = 12);
nlohmann::ordered_json OrderStatsJson(const OrderStats& shuffle, const OrderStats& windowed, const OrderStats& noise);

}  // namespace yc::cli
