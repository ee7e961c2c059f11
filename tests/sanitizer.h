// Whether this test binary is an AddressSanitizer build. ASan reserves terabytes of address space up
// front, so no address-space cap is possible there: tests that use one run uncapped or skip.
#pragma once

namespace yc::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace yc::testing
