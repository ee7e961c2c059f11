#include "libcache/problem.h"

#include <nlohmann/json.hpp>

#include "libcache/path_text.h"

namespace yc {
namespace {

constexpr const char* kNames[kProblemCodeCount] = {
    "unreadable",         "empty-file",
    "unsupported-format", "extension-mismatch",
    "truncated",          "corrupt-data",
    "too-small",          "label-columns",
    "label-not-number",   "label-out-of-range",
    "label-class-out-of-range",
    "label-duplicate",    "label-zero-size",
    "label-orphan",       "duplicate-image",
    "not-regular-file",
    "label-too-many-boxes",
};

}  // namespace

const char* ProblemCodeName(ProblemCode code) {
  const auto i = static_cast<size_t>(code);
  return i < kProblemCodeCount ? kNames[i] : "unknown";
}

std::optional<ProblemCode> ProblemCodeFromName(std::string_view name) {
  for (int i = 0; i < kProblemCodeCount; ++i) {
    if (name == kNames[i]) return static_cast<ProblemCode>(i);
  }
  return std::nullopt;
}

const char* SeverityName(Severity severity) { return severity == Severity::kError ? "error" : "warning"; }

Severity DefaultSeverity(ProblemCode code) {
  switch (code) {
    case ProblemCode::kExtensionMismatch:
    case ProblemCode::kLabelDuplicate:
    case ProblemCode::kLabelZeroSize:
    case ProblemCode::kLabelOrphan:
    case ProblemCode::kDuplicateImage:
      return Severity::kWarning;
    default:
      return Severity::kError;
  }
}

void to_json(nlohmann::json& j, const Problem& p) {
  // File names are bytes, JSON is UTF-8: "file" is always printable, "file_hex" keeps the exact bytes
  // of a name that is not UTF-8 (path_text.h). Messages may quote such a name too.
  j = nlohmann::json{{"split", PrintableText(p.split)},
                     {"file", PrintableText(p.file)},
                     {"severity", SeverityName(p.severity)},
                     {"code", ProblemCodeName(p.code)},
                     {"message", PrintableText(p.message)}};
  if (!IsUtf8(p.file)) j["file_hex"] = HexBytes(p.file);
}

void from_json(const nlohmann::json& j, Problem& p) {
  p.split = j.value("split", "");
  p.file = j.value("file", "");
  const auto hex = j.find("file_hex");
  std::string exact;
  if (hex != j.end() && hex->is_string() && HexToBytes(hex->get<std::string>(), &exact)) p.file = std::move(exact);
  p.message = j.value("message", "");
  p.severity = j.value("severity", "error") == "warning" ? Severity::kWarning : Severity::kError;
  p.code = ProblemCodeFromName(j.value("code", "")).value_or(ProblemCode::kCorruptData);
}

}  // namespace yc
