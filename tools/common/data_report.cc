#include "tools/common/data_report.h"

#include <iostream>

#include "base/status.h"
#include "libcache/base/path_text.h"
#include "libcache/exclusion_report.h"
#include "tools/common/rank_output.h"

namespace yc::cli {

int ReportDataProblems(const std::string& command, const std::string& cache, const std::vector<std::string>& splits,
                       std::ostream& log) {
  std::vector<std::string> used;
  for (const std::string& s : splits) {
    if (!s.empty()) used.push_back(s);
  }
  Result<ExclusionReport> report = ReadExclusionReport(cache, used);
  if (!report.ok()) return -1;
  const bool speak = IsSpeakingRank();  // the ranks share one cache: one speaks for it
  const std::string where = report->audit_file.empty()
                                ? "the cache has no audit.json naming them"
                                : "every file and reason: " + PrintableText(report->audit_file);
  int rc = -1;
  for (const SplitExclusions& s : report->splits) {
    if (speak) {
      for (const std::string& line : ExclusionLines(s)) log << "data: " << line << "\n";
    }
    const SplitFinding f = JudgeSplit(s);
    log.flush();  // the split's lines before what is said about it
    if (f.verdict == SplitVerdict::kError) {
      std::cerr << "yolocache-train " << command << ": error: " << f.reason << " (" << where << ")\n";
      rc = kExitProblems;  // every split is still reported
    } else if (f.verdict == SplitVerdict::kWarning && speak) {
      std::cerr << "yolocache-train " << command << ": warning: " << f.reason << "; they are not used (" << where
                << ")\n";
    }
  }
  return rc;
}

}  // namespace yc::cli
