#include "trainer/config/optimizer_name.h"

#include <array>

#include "base/ascii.h"

namespace yc::trainer {

namespace {

constexpr std::array<OptimizerKind, 7> kKinds = {OptimizerKind::kSGD,   OptimizerKind::kAdam,  OptimizerKind::kAdamW,
                                                 OptimizerKind::kRMSProp, OptimizerKind::kNAdam, OptimizerKind::kRAdam,
                                                 OptimizerKind::kAdamax};

}  // namespace

const char* OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSGD: return "SGD";
    case OptimizerKind::kAdam: return "Adam";
    case OptimizerKind::kAdamW: return "AdamW";
    case OptimizerKind::kRMSProp: return "RMSProp";
    case OptimizerKind::kNAdam: return "NAdam";
    case OptimizerKind::kRAdam: return "RAdam";
    case OptimizerKind::kAdamax: return "Adamax";
  }
  return "?";
}

Result<std::optional<OptimizerKind>> ParseOptimizerName(const std::string& name) {
  const std::string n = AsciiLower(name);
  if (n == "auto") return std::optional<OptimizerKind>();
  std::string known = "auto";
  for (OptimizerKind kind : kKinds) {
    if (n == AsciiLower(OptimizerName(kind))) return std::optional<OptimizerKind>(kind);
    known += std::string(", ") + OptimizerName(kind);
  }
  return Status::InvalidArgument("--optimizer '" + name + "': expected one of " + known + " (any case)");
}

}  // namespace yc::trainer
