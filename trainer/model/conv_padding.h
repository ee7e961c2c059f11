// A Conv2d's padding as numbers, for code that writes or runs a conv outside its forward (export, the
// depthwise kernel). The option is a variant (explicit sizes, kValid or kSame): c10::variant in LibTorch
// 1.x, std::variant in 2.x; the unqualified visit finds the right one by argument lookup.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include <torch/nn/options/conv.h>

namespace yc::trainer {

inline std::array<int64_t, 2> ConvPadding(const torch::nn::detail::ConvNdOptions<2>& o) {
  return visit(
      [&o](const auto& p) -> std::array<int64_t, 2> {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, torch::ExpandingArray<2>>) {
          return {(*p)[0], (*p)[1]};
        } else if constexpr (std::is_same_v<P, torch::enumtype::kSame>) {
          return {(*o.kernel_size())[0] / 2, (*o.kernel_size())[1] / 2};  // odd kernels, dilation 1 (ours)
        } else {
          return {0, 0};  // kValid
        }
      },
      o.padding());
}

}  // namespace yc::trainer
