// Ultralytics MixUp (`ultralytics/data/augment.py`): r ~ Beta(32, 32); img = (img1 * r + img2 * (1 - r))
// .astype(uint8), which truncates; the second sample's boxes are appended after the first's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loader/base/rng.h"

namespace yc {

double DrawMixupRatio(Rng& rng);

// dst[i] = uint8(a[i] * r + b[i] * (1 - r)); dst may alias a or b.
void MixupBlend(const uint8_t* a, const uint8_t* b, double r, uint8_t* dst, size_t count);

}  // namespace yc
