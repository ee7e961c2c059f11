// Ultralytics' optimizer names (engine/trainer.py build_optimizer: Adam, Adamax, AdamW, NAdam, RAdam,
// RMSProp, SGD and auto, matched case-insensitively), read once here so that an unknown name is refused
// with the other options, before any work, and the engine builds exactly the kinds listed.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace yc::trainer {

enum class OptimizerKind { kSGD, kAdam, kAdamW, kRMSProp, kNAdam, kRAdam, kAdamax };

// Ultralytics' spelling: "SGD", "Adam", "AdamW", "RMSProp", "NAdam", "RAdam", "Adamax".
const char* OptimizerName(OptimizerKind kind);

// The kind `name` names (any case); nullopt for "auto" (the engine's rule picks SGD or AdamW). An
// unknown name is InvalidArgument listing the names.
Result<std::optional<OptimizerKind>> ParseOptimizerName(const std::string& name);

}  // namespace yc::trainer
