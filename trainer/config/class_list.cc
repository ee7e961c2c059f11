#include "trainer/config/class_list.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "libcache/base/path_text.h"

namespace yc::trainer {

namespace {

std::string_view Trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

Status Bad(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("classes '" + PrintableText(std::string(text)) + "': " + why +
                                 " (give a class index or a list: 0, [0,2] or 0,2)");
}

}  // namespace

Result<std::vector<int32_t>> ParseClassList(std::string_view text) {
  std::string_view body = Trimmed(text);
  if (body.size() >= 2 && ((body.front() == '[' && body.back() == ']') || (body.front() == '(' && body.back() == ')')))
    body = body.substr(1, body.size() - 2);
  std::vector<int32_t> classes;
  while (!Trimmed(body).empty()) {
    const size_t comma = body.find(',');
    const std::string item(Trimmed(body.substr(0, comma)));
    body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
    if (item.empty()) {
      if (Trimmed(body).empty()) break;  // (0,): Python's one-item tuple
      return Bad(text, "an empty item");
    }
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size() || !std::isfinite(v) || v != std::floor(v)) {
      return Bad(text, "'" + PrintableText(item) + "' is not a class index");
    }
    if (v < 0 || v > std::numeric_limits<int32_t>::max()) return Bad(text, "'" + item + "' is not a class index (>= 0)");
    classes.push_back(static_cast<int32_t>(v));
  }
  if (classes.empty()) return Bad(text, "no class named");
  return classes;
}

std::string ClassListText(const std::vector<int32_t>& classes) {
  std::string text;
  for (size_t i = 0; i < classes.size(); ++i) text += (i ? "," : "") + std::to_string(classes[i]);
  return text;
}

}  // namespace yc::trainer
