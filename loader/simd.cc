#include "loader/simd.h"

#include <atomic>

namespace yc {

namespace {
std::atomic<bool> g_simd_enabled{true};
}  // namespace

bool SimdEnabled() { return g_simd_enabled.load(std::memory_order_relaxed); }
void SetSimdEnabled(bool enabled) { g_simd_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace yc
