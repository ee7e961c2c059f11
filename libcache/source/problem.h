// The problem model shared by the label parser, the decoder, the audit and the builder: every
// finding about a source file is a Problem with a stable code name (printed by `verify`, written to
// JSON, matched by scripts), a severity, and a human message.
//
// Severity decides exclusion, following Ultralytics' `verify_image_label`: an error makes the image
// unusable (excluded from the cache, as Ultralytics drops "corrupt" images); a warning is reported
// and the image is kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace yc {

// Values are stable (they index per-code counters); append new codes at the end only.
enum class ProblemCode : uint8_t {
  kUnreadable = 0,         // the file could not be opened or read (permissions, vanished, a directory)
  kEmptyFile,              // 0 bytes
  kUnsupportedFormat,      // not an image format we decode (or not in this build, or 12-bit JPEG)
  kExtensionMismatch,      // magic bytes say another format than the extension (warning: decoded by content)
  kTruncated,              // the data ends before the image does (JPEG without EOI, cut PNG/BMP)
  kCorruptData,            // the decoder rejected or repaired the data
  kTooSmall,               // < 10 px on a side after EXIF orientation (Ultralytics' assert)
  kLabelColumns,           // a row with the wrong number of values
  kLabelNotNumber,         // a value that is not a finite number
  kLabelOutOfRange,        // a coordinate outside [-0.01, 1.01]
  kLabelClassOutOfRange,   // class < 0, >= nc, or not an integer
  kLabelDuplicate,         // identical rows (warning: duplicates dropped, as Ultralytics)
  kLabelZeroSize,          // w or h <= 0 (warning: the row is dropped)
  kLabelOrphan,            // a label file that no image maps to (warning)
  kDuplicateImage,         // byte-identical to an earlier image (warning: both kept, as Ultralytics)
  kNotRegularFile,         // the image or label path is a FIFO, device, socket or directory (never opened
                           // for reading: a FIFO would block the scan forever)
  kLabelTooManyBoxes,      // more boxes than one record holds (kMaxRecordBoxes, record_format.h)
};
inline constexpr int kProblemCodeCount = 17;

enum class Severity : uint8_t { kWarning = 0, kError = 1 };

// "label-out-of-range" etc.; these names are part of the CLI/JSON contract.
const char* ProblemCodeName(ProblemCode code);
std::optional<ProblemCode> ProblemCodeFromName(std::string_view name);
const char* SeverityName(Severity severity);  // "warning" | "error"
// The usual severity of a code. Only corrupt-data varies: JPEG "extraneous bytes before marker" in an
// otherwise complete image is reported as a warning by the decoder.
Severity DefaultSeverity(ProblemCode code);

// What a scanner component (labels, decode) finds about one file, before it knows the split/path.
struct Issue {
  ProblemCode code;
  Severity severity;
  std::string message;
};

struct Problem {
  std::string split;    // "train", "val", ...
  std::string file;     // path relative to the dataset root (label path for label-orphan)
  std::string message;  // why, in words ("line 3: 4 values, expected 5")
  ProblemCode code = ProblemCode::kCorruptData;
  Severity severity = Severity::kError;
};

// {"split","file","severity":"error"|"warning","code","message"}, plus "file_hex" (the exact bytes)
// when the file name is not valid UTF-8; "file" then shows the invalid bytes as \xNN (path_text.h).
void to_json(nlohmann::json& j, const Problem& p);
void from_json(const nlohmann::json& j, Problem& p);

}  // namespace yc
