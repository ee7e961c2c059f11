// Bounds on a data YAML before yaml-cpp builds its node tree and before any scalar is copied out: an
// alias (*a) is a reference to an anchored node, so a 1 MB file of 20,000 aliases of one 1 MiB string
// "reads" as 20 GB once its values are copied. The document's size as if every alias were written out
// is computed from the parser's events (a scalar counts its bytes, an alias its anchor's size,
// saturating) and bounded, as is the number of aliases.
//
//   YC_RETURN_IF_ERROR(CheckYamlBounds(contents, yaml));  // DataError naming the file, or OK
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/status.h"

namespace yc {

inline constexpr uint64_t kMaxYamlExpandedBytes = uint64_t{16} << 20;  // as the largest YAML file read
inline constexpr uint64_t kMaxYamlAliases = 4096;                       // data YAMLs use a handful, if any

// OK for a document within both bounds (and for one that does not parse: yaml-cpp's own parse reports
// that); else DataError "<yaml>: ...".
Status CheckYamlBounds(const std::string& contents, const std::filesystem::path& yaml);

}  // namespace yc
