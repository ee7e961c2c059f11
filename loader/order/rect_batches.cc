#include "loader/order/rect_batches.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace yc {

RectBatches ComputeRectBatches(const std::vector<cv::Size>& sizes, int batch, int imgsz, int stride, double pad) {
  RectBatches out;
  const size_t n = sizes.size();
  std::vector<double> ar(n);
  for (size_t i = 0; i < n; ++i) ar[i] = static_cast<double>(sizes[i].height) / sizes[i].width;
  out.order.resize(n);
  std::iota(out.order.begin(), out.order.end(), size_t{0});
  std::stable_sort(out.order.begin(), out.order.end(), [&](size_t a, size_t b) { return ar[a] < ar[b]; });
  const size_t nb = (n + batch - 1) / batch;
  out.shapes.resize(nb);
  for (size_t i = 0; i < nb; ++i) {
    const size_t begin = i * batch, end = std::min(n, begin + batch);
    double mini = ar[out.order[begin]], maxi = mini;
    for (size_t k = begin; k < end; ++k) {
      mini = std::min(mini, ar[out.order[k]]);
      maxi = std::max(maxi, ar[out.order[k]]);
    }
    double fh = 1, fw = 1;
    if (maxi < 1)
      fh = maxi;
    else if (mini > 1)
      fw = 1 / mini;
    const int h = static_cast<int>(std::ceil(fh * imgsz / stride + pad)) * stride;
    const int w = static_cast<int>(std::ceil(fw * imgsz / stride + pad)) * stride;
    out.shapes[i] = cv::Size(w, h);
  }
  return out;
}

}  // namespace yc
