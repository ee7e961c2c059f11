// One number as text, printf-style: Debian 12's GCC 12 has no <format>, and iostreams' manipulators do not
// give "%g" / "%.3f" in one expression.
#pragma once

#include <string>

namespace yc {

// `printf_format` holds one double conversion ("%g", "%.3f", "%.1f%%"); the result is at most 63 characters.
std::string FormatNumber(const char* printf_format, double value);

}  // namespace yc
