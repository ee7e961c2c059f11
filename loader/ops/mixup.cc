#include "loader/ops/mixup.h"

namespace yc {

double DrawMixupRatio(Rng& rng) { return rng.Beta(32.0, 32.0); }

void MixupBlend(const uint8_t* a, const uint8_t* b, double r, uint8_t* dst, size_t count) {
  const double q = 1.0 - r;
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<uint8_t>(static_cast<int>(a[i] * r + b[i] * q));
}

}  // namespace yc
