// The data problems of the splits a command uses, said at its start (libcache/exclusion_report.h):
//
//   if (int rc = ReportDataProblems("train", o.data, {"train", "val"}, std::cout); rc >= 0) return rc;
//
// `log` gets the per-split lines ("data: train: 320 images: ..."); a split losing more than
// kExcludedWarnPercent of its images is a warning on stderr, and one without labels, or without a
// usable image, an error on stderr with exit 1 (kExitProblems). Under torchrun only rank 0 prints the
// lines and warnings; every rank stops on an error.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace yc::cli {

// `cache` is a built cache directory (after PrepareDataArg). Empty split names are skipped. Returns -1
// to go on, else the exit code. A cache whose manifest cannot be read is left to the open that follows,
// which reports it with its own exit code.
int ReportDataProblems(const std::string& command, const std::string& cache, const std::vector<std::string>& splits,
                       std::ostream& log);

}  // namespace yc::cli
