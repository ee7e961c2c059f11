#include "libcache/source/labels.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>

#include "base/format.h"
#include "libcache/format/record_format.h"

namespace yc {
namespace {

// Ultralytics compares float32 arrays with Python floats; numpy does that in float32.
constexpr float kMinCoord = -0.01f;
constexpr float kMaxCoord = 1.01f;

struct Row {
  uint32_t first;  // index into the values array
  uint32_t count;  // number of values
  uint32_t line;   // 1-based line number
  bool bad;        // some value is not a finite number
};

// Per-thread scratch: the parser runs inside the builder's TBB pipeline on every label file.
struct Scratch {
  std::vector<float> values;
  std::vector<Row> rows;
  std::vector<uint32_t> order;
  std::vector<uint32_t> box_line;
};

bool IsLineBreak(char c) { return c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Printable, bounded copy of a token for a message (the input may be binary garbage).
std::string Quote(const char* b, const char* e) {
  std::string s = "'";
  const size_t n = std::min<size_t>(static_cast<size_t>(e - b), 24);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(b[i]);
    s += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (static_cast<size_t>(e - b) > n) s += "...";
  return s + "'";
}

// Python float() syntax minus the exotic parts: optional sign, decimal/exponent, inf, nan.
// Returns false for anything else. Out-of-range magnitudes become +-inf / 0 like float().
bool ParseNumber(const char* b, const char* e, float* out) {
  bool negative = false;
  if (b < e && (*b == '+' || *b == '-')) {
    negative = *b == '-';
    ++b;
  }
  if (b == e || *b == '+' || *b == '-') return false;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(b, e, v, std::chars_format::general);
  if (ptr != e) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves v unset on range errors; decide from the exponent's sign.
    const char* x = std::find_if(b, e, [](char c) { return c == 'e' || c == 'E'; });
    v = (x + 1 < e && x[1] == '-') ? 0.0 : HUGE_VAL;
  } else if (ec != std::errc()) {
    return false;
  }
  *out = static_cast<float>(negative ? -v : v);
  return true;
}

// Collects problems per code: the first message and how many rows had that problem.
class Report {
 public:
  void Add(ProblemCode code, const std::string& message) {
    Entry& e = entries_[static_cast<size_t>(code)];
    if (e.count++ == 0) e.message = message;
  }
  void AddLine(ProblemCode code, uint32_t line, const std::string& what) {
    Entry& e = entries_[static_cast<size_t>(code)];
    if (e.count++ == 0) e.message = "line " + std::to_string(line) + ": " + what;
  }
  bool Has(ProblemCode code) const { return entries_[static_cast<size_t>(code)].count > 0; }
  void Emit(std::vector<Issue>* out) const {
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (e.count == 0) continue;
      const auto code = static_cast<ProblemCode>(i);
      std::string msg = e.message;
      if (e.count > 1) msg += " (+" + std::to_string(e.count - 1) + " more)";
      out->push_back({code, DefaultSeverity(code), std::move(msg)});
    }
  }

 private:
  struct Entry {
    uint32_t count = 0;
    std::string message;
  };
  std::array<Entry, kProblemCodeCount> entries_;
};

bool InRange(float v) { return v >= kMinCoord && v <= kMaxCoord; }

std::string_view SkipUtf8Bom(std::string_view text) {
  if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
      static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF) {
    text.remove_prefix(3);
  }
  return text;
}

// Pass 1: every non-blank line becomes a Row of floats in s->rows / s->values (a value that is not a
// finite number is stored as 0 and marks its row bad). Returns the widest row's value count.
size_t TokeniseRows(std::string_view text, Scratch* s, Report* report) {
  s->values.clear();
  s->rows.clear();
  const char* p = text.data();
  const char* const end = p + text.size();
  uint32_t line = 1;
  size_t max_count = 0;
  while (p < end) {
    Row row{static_cast<uint32_t>(s->values.size()), 0, line, false};
    while (p < end && !IsLineBreak(*p)) {
      if (IsBlank(*p)) {
        ++p;
        continue;
      }
      const char* tb = p;
      while (p < end && !IsLineBreak(*p) && !IsBlank(*p)) ++p;
      float v = 0;
      if (!ParseNumber(tb, p, &v) || !std::isfinite(v)) {
        if (!row.bad) report->AddLine(ProblemCode::kLabelNotNumber, line, Quote(tb, p) + " is not a finite number");
        row.bad = true;
        v = 0;
      }
      s->values.push_back(v);
      ++row.count;
    }
    if (row.count > 0) {
      s->rows.push_back(row);
      max_count = std::max<size_t>(max_count, row.count);
    }
    if (p < end) {  // consume one line break; \r\n counts as one
      if (*p == '\r' && p + 1 < end && p[1] == '\n') ++p;
      ++p;
      ++line;
    }
  }
  return max_count;
}

// Whether the row has as many values as its file's mode needs (5, or a class and x y pairs).
bool CheckColumns(const Row& row, bool segments, Report* report) {
  if (segments) {
    if (row.count < 3 || (row.count - 1) % 2 != 0) {
      report->AddLine(ProblemCode::kLabelColumns, row.line,
                      std::to_string(row.count) + " values: a polygon row needs a class and x y pairs");
      return false;
    }
  } else if (row.count != 5) {
    report->AddLine(ProblemCode::kLabelColumns, row.line, std::to_string(row.count) + " values, expected 5");
    return false;
  }
  return true;
}

// Whether the class value is an integer id in [0, nc) (or below kMaxUndeclaredClasses when nc <= 0).
bool CheckClass(float cls, int nc, uint32_t line, Report* report) {
  if (cls != std::floor(cls)) {
    report->AddLine(ProblemCode::kLabelClassOutOfRange, line, "class " + FormatNumber("%g", cls) + " is not an integer");
  } else if (cls < 0) {
    report->AddLine(ProblemCode::kLabelClassOutOfRange, line, "class " + FormatNumber("%g", cls) + " < 0");
  } else if (nc > 0 && cls >= static_cast<float>(nc)) {
    report->AddLine(ProblemCode::kLabelClassOutOfRange, line, "class " + FormatNumber("%g", cls) + " >= nc " + std::to_string(nc));
  } else if (nc <= 0 && cls >= static_cast<float>(kMaxUndeclaredClasses)) {
    report->AddLine(ProblemCode::kLabelClassOutOfRange, line,
                    "class " + FormatNumber("%g", cls) + " >= " + std::to_string(kMaxUndeclaredClasses) +
                        ", the limit for a dataset that declares no class count (give one in a data YAML)");
  } else {
    return true;
  }
  return false;
}

// Whether every coordinate v[1..count) lies in [-0.01, 1.01]; the first one outside is reported.
bool CheckCoordinates(const float* v, const Row& row, Report* report) {
  for (uint32_t i = 1; i < row.count; ++i) {
    if (!InRange(v[i])) {
      report->AddLine(ProblemCode::kLabelOutOfRange, row.line, "value " + FormatNumber("%g", v[i]) + " outside [-0.01, 1.01]");
      return false;
    }
  }
  return true;
}

// The box of a row's coordinates: cx cy w h as written, or the min/max box of a polygon's points.
void SetGeometry(const float* v, uint32_t count, bool segments, Box* box) {
  if (segments) {
    float x0 = v[1], x1 = v[1], y0 = v[2], y1 = v[2];
    for (uint32_t i = 3; i + 1 < count; i += 2) {
      x0 = std::min(x0, v[i]);
      x1 = std::max(x1, v[i]);
      y0 = std::min(y0, v[i + 1]);
      y1 = std::max(y1, v[i + 1]);
    }
    box->cx = (x0 + x1) / 2;
    box->cy = (y0 + y1) / 2;
    box->w = x1 - x0;
    box->h = y1 - y0;
  } else {
    box->cx = v[1];
    box->cy = v[2];
    box->w = v[3];
    box->h = v[4];
  }
}

// Pass 2, one row: its box when the row is well-formed (right column count, numbers, class and
// coordinates in range); false, with the problems reported, when not. Class and coordinates are both
// checked, so a row with both wrong reports both.
bool RowToBox(const Row& row, const float* v, bool segments, int nc, Report* report, Box* box) {
  if (!CheckColumns(row, segments, report)) return false;
  if (row.bad) return false;  // already reported as label-not-number
  const bool class_ok = CheckClass(v[0], nc, row.line, report);
  const bool coordinates_ok = CheckCoordinates(v, row, report);
  if (!class_ok || !coordinates_ok) return false;
  box->cls = static_cast<int32_t>(v[0]);
  SetGeometry(v, row.count, segments, box);
  return true;
}

// Exact duplicates (as float32 rows, like np.unique(axis=0)): keep the first, drop the rest.
void DropDuplicates(Scratch* s, ParsedLabels* out, Report* report) {
  if (out->boxes.size() <= 1) return;
  auto key = [&](uint32_t i) {
    const Box& b = out->boxes[i];
    return std::make_tuple(b.cls, b.cx, b.cy, b.w, b.h);
  };
  s->order.resize(out->boxes.size());
  for (uint32_t i = 0; i < s->order.size(); ++i) s->order[i] = i;
  std::sort(s->order.begin(), s->order.end(), [&](uint32_t a, uint32_t b) {
    const auto ka = key(a), kb = key(b);
    return ka < kb || (ka == kb && a < b);
  });
  size_t dups = 0;
  uint32_t first_dup_line = 0;
  uint32_t head = s->order[0];  // first (lowest index) row of the current run of equal rows
  for (size_t i = 1; i < s->order.size(); ++i) {
    if (key(s->order[i]) != key(head)) {
      head = s->order[i];
    } else {
      // A later copy (ties are sorted by index): mark it by a negative class; head stays unmarked.
      const uint32_t idx = s->order[i];
      if (dups == 0 || s->box_line[idx] < first_dup_line) first_dup_line = s->box_line[idx];
      out->boxes[idx].cls = -1;
      ++dups;
    }
  }
  if (dups == 0) return;
  out->boxes.erase(std::remove_if(out->boxes.begin(), out->boxes.end(), [](const Box& b) { return b.cls < 0; }),
                   out->boxes.end());
  out->duplicates = dups;
  report->Add(ProblemCode::kLabelDuplicate, std::to_string(dups) + " duplicate row" + (dups > 1 ? "s" : "") +
                                                " removed (first at line " + std::to_string(first_dup_line) + ")");
}

}  // namespace

bool ParsedLabels::has_error() const {
  for (const Issue& i : issues) {
    if (i.severity == Severity::kError) return true;
  }
  return false;
}

void ParseLabels(std::string_view text, int nc, ParsedLabels* out) {
  thread_local Scratch s;
  out->boxes.clear();
  out->issues.clear();
  out->rows = out->duplicates = out->zero_size = 0;
  out->segments = false;
  s.box_line.clear();

  Report report;
  // Segment mode depends on the widest row, so rows are interpreted only after all are read.
  const size_t max_count = TokeniseRows(SkipUtf8Bom(text), &s, &report);
  out->rows = s.rows.size();
  out->segments = max_count > 6;
  for (const Row& row : s.rows) {
    Box box;
    if (!RowToBox(row, s.values.data() + row.first, out->segments, nc, &report, &box)) continue;
    if (!(box.w > 0) || !(box.h > 0)) {
      report.AddLine(ProblemCode::kLabelZeroSize, row.line,
                     "w " + FormatNumber("%g", box.w) + " h " + FormatNumber("%g", box.h) + ": box without area dropped");
      ++out->zero_size;
      continue;
    }
    out->boxes.push_back(box);
    s.box_line.push_back(row.line);
  }
  DropDuplicates(&s, out, &report);

  // The same limit the record encoder enforces, so verify and build agree on which images are usable.
  if (out->boxes.size() > kMaxRecordBoxes) {
    report.Add(ProblemCode::kLabelTooManyBoxes, std::to_string(out->boxes.size()) + " boxes, more than the " +
                                                    std::to_string(kMaxRecordBoxes) + " one image may have");
  }

  report.Emit(&out->issues);
  if (out->has_error()) out->boxes.clear();
}

ParsedLabels ParseLabels(std::string_view text, int nc) {
  ParsedLabels out;
  ParseLabels(text, nc, &out);
  return out;
}

}  // namespace yc
