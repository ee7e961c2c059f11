#include "libcache/report_json.h"

#include "libcache/base/path_json.h"

namespace yc {

nlohmann::ordered_json BuildReportJson(const BuildReport& r) {
  nlohmann::ordered_json j;
  j["cache"] = PrintableText(r.cache_dir.string());
  j["root"] = PrintableText(r.root.string());
  j["root_from"] = PrintableText(r.root_from);
  j["classes"] = r.names.size();
  j["audit_report"] = PrintableText(r.audit_report.string());
  for (const SplitBuildStats& s : r.splits) {
    j["splits"][s.split] = {{"images", s.audit.summary.images}, {"records", s.records},
                            {"reused", s.reused},               {"excluded", s.audit.summary.excluded},
                            {"jpeg_records", s.jpeg_records},
                            {"backgrounds", s.audit.summary.backgrounds}, {"boxes", s.audit.summary.boxes},
                            {"redecoded_corrupt", s.redecoded_corrupt.size()},
                            {"redecoded_corrupt_sources", s.redecoded_corrupt}};
  }
  j["redecoded_corrupt"] = r.redecoded_corrupt;
  j["records"] = r.records;
  j["pixel_bytes"] = r.pixel_bytes;
  j["bytes_on_disk"] = r.bytes_on_disk;
  j["seconds"] = r.seconds;
  j["images_per_second"] = r.images_per_second();
  return j;
}

nlohmann::ordered_json SourceAuditJson(const DatasetSpec& spec, const DatasetAudit& audit, bool strict) {
  nlohmann::ordered_json j;
  j["source"] = PrintableText(spec.source.string());
  j["splits"] = nlohmann::ordered_json::object();
  nlohmann::json problems = nlohmann::json::array();
  for (const SplitAudit& s : audit.splits) {
    j["splits"][s.split] = nlohmann::json(s.summary);
    for (const Problem& p : s.problems) problems.push_back(p);
  }
  j["total"] = nlohmann::json(audit.total);
  j["problems"] = std::move(problems);
  j["ok"] = !(audit.total.errors > 0 || (strict && audit.total.warnings > 0));
  return j;
}

nlohmann::ordered_json CacheVerifyJson(const std::string& cache, const VerifyReport& report,
                                       const std::vector<SourceChange>* changes, bool strict) {
  nlohmann::ordered_json j;
  j["cache"] = PrintableText(cache);
  j["ok"] = report.ok() && !(strict && changes != nullptr && !changes->empty());
  j["files_checked"] = report.files_checked;
  j["records_checked"] = report.records_checked;
  j["bytes_checked"] = report.bytes_checked;
  nlohmann::json problems = nlohmann::json::array();
  for (const VerifyProblem& p : report.problems) {
    problems.push_back({{"split", p.split}, {"file", PrintableText(p.file)}, {"record", p.record},
                        {"file_record", p.file_record}, {"source", PrintableText(p.source)}, {"severity", "error"},
                        {"code", "cache-corrupt"}, {"message", PrintableText(p.message)}});
  }
  j["problems"] = std::move(problems);
  if (changes != nullptr) {
    nlohmann::json cj = nlohmann::json::array();
    for (const SourceChange& c : *changes) {
      nlohmann::json e = {{"change", SourceChangeKindName(c.kind)}, {"split", c.split}, {"what", c.label ? "label" : "image"}};
      SetPathField(e, "file", c.path);  // the exact name too, as in audit.json
      cj.push_back(std::move(e));
    }
    j["source_changes"] = std::move(cj);
  }
  return j;
}

std::string JsonText(const nlohmann::ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace yc
