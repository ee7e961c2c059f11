// Where a sample's Mosaic and MixUp partners come from: the whole split or one window of the
// windowed order (window_order.h). The plan (render/plan.h) draws from it.
#pragma once

#include <cstdint>

#include "loader/base/rng.h"

namespace yc {

// Where Mosaic and MixUp partners are drawn from: uniformly over `size` records, either the whole
// split (records == nullptr: partner = Below(size), today's default order) or a window of the
// windowed order (partner = records[Below(size)]). Either way one Below() draw per partner, so the
// plan's other draws stay where they are. Implicit from a record count so the default reads as before.
struct PartnerDomain {
  PartnerDomain(uint64_t n) : size(n) {}  // NOLINT(google-explicit-constructor): the whole split
  PartnerDomain(const uint32_t* window, uint64_t n) : records(window), size(n) {}
  uint64_t Draw(Rng& rng) const {
    const uint64_t i = rng.Below(size);
    return records != nullptr ? records[i] : i;
  }
  const uint32_t* records = nullptr;
  uint64_t size = 0;
};

}  // namespace yc
