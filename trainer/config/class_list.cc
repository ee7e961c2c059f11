#include "trainer/config/class_list.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "libcache/base/path_text.h"

namespace yc::trainer {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One id: digits only (no sign, no exponent), within int.
bool ClassId(std::string_view item, int* out) {
  if (item.empty() || item.find_first_not_of("0123456789") != std::string_view::npos) return false;
  const std::string s(item);
  errno = 0;
  const long v = std::strtol(s.c_str(), nullptr, 10);
  if (errno != 0 || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

Result<std::vector<int>> ParseClassList(std::string_view text) {
  std::string_view s = Trim(text);
  const bool bracketed = s.size() >= 2 && ((s.front() == '[' && s.back() == ']') || (s.front() == '(' && s.back() == ')'));
  if (bracketed) s = Trim(s.substr(1, s.size() - 2));
  std::vector<int> ids;
  if (s.empty()) return ids;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    const std::string_view item = Trim(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start));
    int id = 0;
    if (!ClassId(item, &id)) {
      return Status::InvalidArgument("classes=" + PrintableText(std::string(text)) + ": '" + PrintableText(std::string(item)) +
                                     "' is not a class id (an integer >= 0; give classes=0 or classes=[0,2,3])");
    }
    ids.push_back(id);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ids;
}

}  // namespace yc::trainer
