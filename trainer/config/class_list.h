// Ultralytics' `classes` value (cfg/default.yaml: "filter results by class, i.e. classes=0, or
// classes=[0,2,3]"): one class id, or a list of them as Ultralytics' CLI and a YAML write it.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"

namespace yc::trainer {

// "0", "[0,2,3]", "0,2,3", "[0, 2]" (also in parentheses) -> {0, 2, 3} in the order given, duplicates
// kept (they filter the same way). "" or "[]" -> {} (no filter: Ultralytics' classes=None). Anything
// else (a name, a negative or fractional id, an empty item) is InvalidArgument naming the value and the
// item: a class id is an integer >= 0.
Result<std::vector<int>> ParseClassList(std::string_view text);

}  // namespace yc::trainer
