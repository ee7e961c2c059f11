// ASCII case folding for the names a user or a file spells in either case (models, optimizers, backends, zip
// members): std::tolower depends on the locale, these names never do.
#pragma once

#include <string>

namespace yc {

inline std::string AsciiLower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace yc
