#include "libcache/exclusion_report.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <unordered_map>
#include <unordered_set>

#include "libcache/base/file_read.h"
#include "libcache/base/path_text.h"
#include "libcache/source/discover.h"

namespace yc {
namespace {

namespace fs = std::filesystem;

// One audit.json problem of the split, as recorded (the code kept as text: a newer tool's code is
// still named as it wrote it).
struct RecordedProblem {
  Problem problem;
  std::string code;
};

std::string Percent(size_t part, size_t whole) {
  if (whole == 0 || part == 0) return "0%";
  const double p = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  if (p < 0.1) return "<0.1%";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", p);
  return buf;
}

// The label file an image had at build, relative to the dataset root as the audit names it
// (discover.h's rule applied to the absolute path, so a root that itself holds /images/ maps alike).
std::string LabelRelFor(const std::string& root, const std::string& image_rel) {
  if (root.empty()) {  // a manifest without dataset_root: the relative path, anchored for the rule
    if (!image_rel.empty() && image_rel[0] == '/') return LabelPathFor(image_rel).generic_string();
    return LabelPathFor(fs::path("/" + image_rel)).generic_string().substr(1);
  }
  return RelativePath(root, LabelPathFor(fs::path(root) / image_rel));
}

// audit.json's problems of `split`, in file order; entries that do not read as problems are skipped.
std::vector<RecordedProblem> SplitProblems(const nlohmann::json* audit, const std::string& split) {
  std::vector<RecordedProblem> out;
  if (audit == nullptr || !audit->is_object()) return out;
  const auto it = audit->find("problems");
  if (it == audit->end() || !it->is_array()) return out;
  for (const nlohmann::json& pj : *it) {
    try {
      if (!pj.is_object() || pj.value("split", std::string()) != split) continue;
      RecordedProblem r{pj.get<Problem>(), pj.value("code", std::string())};
      if (r.code.empty()) continue;
      out.push_back(std::move(r));
    } catch (const std::exception&) {
      // A damaged entry loses one reason; the counts come from the manifest.
    }
  }
  return out;
}

// The causes of the split's excluded images: each image counts once, under its first error (an image
// error comes before its label's in the audit, as the scan finds them).
void AddCauses(const SplitManifest& sm, const std::string& root, const std::vector<RecordedProblem>& problems,
               SplitExclusions* s) {
  std::unordered_map<std::string, const RecordedProblem*> first_error;
  for (const RecordedProblem& r : problems) {
    if (r.problem.severity == Severity::kError) first_error.emplace(r.problem.file, &r);
  }
  std::unordered_set<std::string> owned;  // files of the excluded images (their errors are accounted for)
  std::map<std::string, size_t> index;    // code -> position in s->causes
  size_t named = 0;
  for (const SourceFingerprint& fp : sm.sources) {
    if (fp.record >= 0) continue;
    ++named;
    const std::string label = LabelRelFor(root, fp.path);
    owned.insert(fp.path);
    owned.insert(label);
    auto found = first_error.find(fp.path);
    if (found == first_error.end()) found = first_error.find(label);
    ExclusionCause first;  // what the cause says when this image is its first
    first.code = "unrecorded";
    if (found != first_error.end()) {
      first.code = found->second->code;
      first.first_file = found->second->problem.file;
      first.first_message = found->second->problem.message;
    }
    auto [at, added] = index.emplace(first.code, s->causes.size());
    if (added) s->causes.push_back(std::move(first));
    ExclusionCause& cause = s->causes[at->second];
    ++cause.images;
    if (cause.examples.size() < kExcludedExamples) cause.examples.push_back(fp.path);
  }
  if (named < s->excluded) {  // a bare cache without fingerprints: the count alone
    auto [at, added] = index.emplace("unrecorded", s->causes.size());
    if (added) s->causes.push_back(ExclusionCause{"unrecorded", 0, {}, "", ""});
    s->causes[at->second].images += s->excluded - named;
  }
  std::stable_sort(s->causes.begin(), s->causes.end(),
                   [](const ExclusionCause& a, const ExclusionCause& b) { return a.images > b.images; });
  for (const RecordedProblem& r : problems) {
    if (r.problem.severity == Severity::kError && owned.count(r.problem.file) == 0) s->split_errors.push_back(r.problem);
  }
}

SplitExclusions SplitReport(const Manifest& m, const SplitManifest& sm, const nlohmann::json* audit) {
  SplitExclusions s;
  s.split = sm.name;
  s.records = sm.records;
  s.backgrounds = sm.backgrounds;
  s.excluded = sm.excluded;
  s.images = s.records + s.excluded;
  s.boxes = sm.boxes;
  s.sources_known = !sm.sources.empty();
  for (const SourceFingerprint& fp : sm.sources) s.label_files += fp.record >= 0 && fp.has_label ? 1 : 0;
  if (s.sources_known) {
    s.first_image = sm.sources.front().path;
    s.first_label = LabelRelFor(m.dataset_root, s.first_image);
  }
  const std::vector<RecordedProblem> problems = SplitProblems(audit, sm.name);
  AddCauses(sm, m.dataset_root, problems, &s);
  for (const RecordedProblem& r : problems) {
    if (r.problem.severity == Severity::kWarning) ++s.warnings[r.code];
  }
  return s;
}

std::string CauseLine(const SplitExclusions& s, const ExclusionCause& c) {
  std::string line = "  " + c.code + " " + std::to_string(c.images) + " (" + Percent(c.images, s.images) + ")";
  if (c.examples.empty()) return line + (c.code == "unrecorded" ? ": the cache names no files" : "");
  line += ": " + PrintableText(c.examples[0]);
  if (!c.first_message.empty()) {
    const std::string where = c.first_file == c.examples[0] ? "" : PrintableText(c.first_file) + ": ";
    line += " (" + where + PrintableText(c.first_message) + ")";
  }
  for (size_t i = 1; i < c.examples.size(); ++i) line += ", " + PrintableText(c.examples[i]);
  if (c.images > c.examples.size()) line += " and " + std::to_string(c.images - c.examples.size()) + " more";
  return line;
}

std::string CodeCounts(const SplitExclusions& s) {
  std::string text;
  for (const ExclusionCause& c : s.causes) text += (text.empty() ? "" : ", ") + c.code + " " + std::to_string(c.images);
  return text;
}

}  // namespace

ExclusionReport BuildExclusionReport(const Manifest& manifest, const nlohmann::json* audit,
                                     const std::vector<std::string>& splits) {
  ExclusionReport report;
  for (const std::string& name : splits) {
    const SplitManifest* sm = manifest.FindSplit(name);
    if (sm == nullptr) continue;  // the command that needs it says so
    report.splits.push_back(SplitReport(manifest, *sm, audit));
  }
  return report;
}

Result<ExclusionReport> ReadExclusionReport(const fs::path& dir, const std::vector<std::string>& splits) {
  YC_ASSIGN_OR_RETURN(Manifest m, ReadManifest(dir));
  nlohmann::json audit;
  std::string audit_file;
  if (m.audit_report) {
    YC_RETURN_IF_ERROR(CheckMetadataFile(dir, *m.audit_report));
    const fs::path path = dir / m.audit_report->file;
    std::string text;
    YC_RETURN_IF_ERROR(ReadRegularFile(path, kMaxMetadataBytes, &text));
    audit = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (audit.is_discarded()) return Status::Corruption(Status::At(path.string(), "not valid JSON"));
    audit_file = path.string();
  }
  ExclusionReport report = BuildExclusionReport(m, audit_file.empty() ? nullptr : &audit, splits);
  report.audit_file = std::move(audit_file);
  return report;
}

std::vector<std::string> ExclusionLines(const SplitExclusions& s) {
  std::vector<std::string> lines;
  lines.push_back(s.split + ": " + std::to_string(s.images) + " images: " + std::to_string(s.records) + " kept (" +
                  std::to_string(s.backgrounds) + " backgrounds), " + std::to_string(s.excluded) + " excluded (" +
                  Percent(s.excluded, s.images) + ")" + (s.excluded > 0 ? ":" : ""));
  for (const ExclusionCause& c : s.causes) lines.push_back(CauseLine(s, c));
  for (const Problem& p : s.split_errors)
    lines.push_back("  " + std::string(ProblemCodeName(p.code)) + ": " + PrintableText(p.file) + " (" +
                    PrintableText(p.message) + "): its images are not in the split");
  if (!s.warnings.empty()) {
    std::string text;
    for (const auto& [code, n] : s.warnings) text += (text.empty() ? "" : ", ") + code + " " + std::to_string(n);
    lines.push_back("  warnings (images kept): " + text);
  }
  return lines;
}

SplitFinding JudgeSplit(const SplitExclusions& s) {
  const std::string name = "split " + s.split;
  if (s.images == 0) return {SplitVerdict::kError, name + " has no images"};
  if (s.records == 0) {
    return {SplitVerdict::kError, name + ": all " + std::to_string(s.images) + " images are excluded (" + CodeCounts(s) +
                                      "): no image of it can be used"};
  }
  if (s.boxes == 0) {
    std::string why;
    if (s.excluded > 0) {
      why = "its " + std::to_string(s.records) + " kept images have no boxes and the other " +
            std::to_string(s.excluded) + " are excluded (" + CodeCounts(s) + ")";
    } else if (!s.sources_known) {
      why = "none of its " + std::to_string(s.records) + " images has a box";
    } else if (s.label_files == 0) {
      why = "none of its " + std::to_string(s.images) + " images has a label file (" + PrintableText(s.first_image) +
            " would have " + PrintableText(s.first_label) +
            "; labels are found by replacing the last /images/ with /labels/, as Ultralytics does)";
    } else {
      why = "its " + std::to_string(s.label_files) + " label files hold no boxes (empty, or every row dropped)";
    }
    return {SplitVerdict::kError, "no labels found in " + name + ": " + why +
                                      "; every image would be a background (box loss 0, nothing learned or measured)"};
  }
  if (s.excluded_percent() > kExcludedWarnPercent) {
    char limit[16];
    std::snprintf(limit, sizeof limit, "%g%%", kExcludedWarnPercent);
    return {SplitVerdict::kWarning, std::to_string(s.excluded) + " of the " + std::to_string(s.images) + " images of " +
                                        name + " (" + Percent(s.excluded, s.images) + ") are excluded, more than " +
                                        limit + " (" + CodeCounts(s) + ")"};
  }
  return {};
}

}  // namespace yc
