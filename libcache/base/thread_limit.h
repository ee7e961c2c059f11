// The most worker threads any yolocache pool is given: the loader's (loader/options.h), the builder's
// (libcache/build/builder.h) and the trainer's LibTorch threads. TBB aborts the process at its arena limit
// (65,535) and each thread costs a stack, so a count beyond what a machine could use is a typo, refused
// up front (exit 2 / ValueError) rather than a hang or an abort later. 0 means "all hardware threads".
#pragma once

#include <string>

namespace yc {

inline constexpr int kMaxThreads = 1024;

// "threads must be 0 (all cores) .. 1024, got N" for `option` ("--threads", "threads"); "" when valid.
inline std::string ThreadCountError(const std::string& option, long long value) {
  if (value >= 0 && value <= kMaxThreads) return std::string();
  return option + " must be 0 (all cores) .. " + std::to_string(kMaxThreads) + ", got " + std::to_string(value);
}

}  // namespace yc
