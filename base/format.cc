#include "base/format.h"

#include <cstdio>

namespace yc {

std::string FormatNumber(const char* printf_format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, printf_format, value);
  return text;
}

}  // namespace yc
