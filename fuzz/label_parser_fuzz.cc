// libFuzzer target for the YOLO label parser: any bytes, any nc. Checks the parser's contract, not
// just the absence of crashes: kept boxes have positive size, values in range, classes valid, and an
// erroneous file keeps no boxes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "libcache/source/labels.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // First byte picks nc (0 = unknown, else 1..255), the rest is the label text.
  const int nc = size > 0 ? data[0] : 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + (size > 0 ? 1 : 0), size > 0 ? size - 1 : 0);
  yc::ParsedLabels out;
  yc::ParseLabels(text, nc, &out);
  if (out.has_error() && !out.boxes.empty()) std::abort();
  if (out.issues.size() > static_cast<size_t>(yc::kProblemCodeCount)) std::abort();
  for (const yc::Box& b : out.boxes) {
    if (!(b.w > 0) || !(b.h > 0) || b.cls < 0 || (nc > 0 && b.cls >= nc)) std::abort();
    if (!(b.cx >= -0.01f && b.cx <= 1.01f && b.cy >= -0.01f && b.cy <= 1.01f)) std::abort();
  }
  if (out.boxes.size() > out.rows) std::abort();
  // Reuse of the same result object must give the same answer.
  yc::ParsedLabels again;
  yc::ParseLabels(text, nc, &again);
  yc::ParseLabels(text, nc, &out);
  if (again.boxes.size() != out.boxes.size() || again.issues.size() != out.issues.size()) std::abort();
  return 0;
}
