#include "libcache/source/problem.h"

#include <nlohmann/json.hpp>

#include "libcache/base/path_json.h"

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
  j = nlohmann::json{{"split", PrintableText(p.split)}};
  SetPathField(j, "file", p.file);
  j["severity"] = SeverityName(p.severity);
  j["code"] = ProblemCodeName(p.code);
  j["message"] = PrintableText(p.message);
}

void from_json(const nlohmann::json& j, Problem& p) {
  p.split = j.value("split", "");
  p.file = j.value("file", "");
  GetPathField(j, "file", &p.file);  // the exact bytes, when "file_hex" holds them
  p.message = j.value("message", "");
  p.severity = j.value("severity", "error") == "warning" ? Severity::kWarning : Severity::kError;
  p.code = ProblemCodeFromName(j.value("code", "")).value_or(ProblemCode::kCorruptData);
}

}  // namespace yc
