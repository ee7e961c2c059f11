// A module's parameters then buffers, by qualified name (state_dict order): the order the checkpoint
// writer lists a section's tensors in and the reader matches them back by.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

namespace yc::trainer {

inline std::vector<std::pair<std::string, at::Tensor>> NamedState(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : m.named_parameters(true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : m.named_buffers(true)) out.emplace_back(b.key(), b.value());
  return out;
}

}  // namespace yc::trainer
