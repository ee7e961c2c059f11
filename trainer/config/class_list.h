// Ultralytics' `classes` argument (a class index, or a list of them) as its command line, its Python
// calls and its YAML files write it, read in one place for every command that takes it (train and val:
// the labels kept; predict: the detections kept):
//
//   ParseClassList("0")      -> {0}        classes=0
//   ParseClassList("[0, 2]") -> {0, 2}     classes=[0,2], a cfg= or args.yaml list
//   ParseClassList("0,2")    -> {0, 2}     classes=0,2 (Ultralytics' CLI reads it as the tuple (0, 2))
//
// Ultralytics compares the label (or detection) class with each listed one: order and repeats do not
// matter, and the list is kept as given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace yc::trainer {

// InvalidArgument naming the text and the item when an item is not a non-negative integer (2.0 is 2,
// as Python compares it; 2.5 is not a class) or when no class is named.
Result<std::vector<int32_t>> ParseClassList(std::string_view text);

// "0,2": the list as the CLI's --classes takes it back.
std::string ClassListText(const std::vector<int32_t>& classes);

}  // namespace yc::trainer
