// What a data-parallel rank says. Ultralytics logs on RANK -1 and 0 only (ultralytics/utils/__init__.py
// set_logging: other ranks log errors alone), so ranks other than 0 keep their notes and progress to
// themselves; their errors still reach stderr.
//
//   RankStream(std::cerr) << "note: ...";   // printed by a plain process or rank 0, dropped by the others
#pragma once

#include <cstdlib>
#include <cstring>
#include <ostream>

namespace yc::cli {

// Not a rank, or rank 0 (RANK unset, empty or "0", as torchrun and train device=0,1 set it).
inline bool IsSpeakingRank() {
  const char* rank = std::getenv("RANK");
  return rank == nullptr || *rank == '\0' || std::strcmp(rank, "0") == 0;
}

// `out` where this process speaks, else a stream that drops what it is given.
inline std::ostream& RankStream(std::ostream& out) {
  static std::ostream quiet(nullptr);  // no buffer: every write is dropped
  return IsSpeakingRank() ? out : quiet;
}

}  // namespace yc::cli
