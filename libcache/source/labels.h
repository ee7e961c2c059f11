// YOLO label text -> boxes + problems, with Ultralytics' `verify_image_label` semantics.
//
// Input is any bytes. Lines end at \n, \r\n, \r, \v or \f (Python's splitlines); values are separated
// by spaces/tabs; blank lines, trailing blanks and a leading UTF-8 BOM are ignored.
//   * A row of 5 values is `class cx cy w h` (normalised).
//   * If ANY row has more than 6 values the whole file is a segment file (as Ultralytics): EVERY row is
//     then `class x1 y1 x2 y2 ...` and becomes the min/max box of its points (segments2boxes), so a
//     5-value row in such a file is a 2-point polygon, exactly as Ultralytics reads it.
// Problems (codes in problem.h):
//   error   label-columns            a row with != 5 values (box file), or an odd / empty point list
//   error   label-not-number         a value that is not a finite number (nan, inf, "abc", "1,5")
//   error   label-out-of-range       a box value or polygon point outside [-0.01, 1.01]
//   error   label-class-out-of-range class < 0, >= nc (>= kMaxUndeclaredClasses when the dataset
//                                    declares no class count), or not an integer value
//   error   label-too-many-boxes     more than kMaxRecordBoxes boxes kept (after duplicates and
//                                    zero-size rows are dropped): more than one record holds
//   warning label-zero-size          w or h <= 0: the row is dropped (Ultralytics keeps it, but a box
//                                    without area trains nothing and breaks IoU; dropping is harmless)
//   warning label-duplicate          rows equal as float32 after conversion: later copies are dropped
//                                    (file order is kept; Ultralytics returns them sorted)
// Any error makes the whole file (and so the image) unusable, as Ultralytics marks it corrupt; the boxes
// are then cleared. Repeated problems of one kind are reported once, with the first line and a count.
#pragma once

#include <string_view>
#include <vector>

#include "libcache/base/box.h"
#include "libcache/source/problem.h"

namespace yc {

// The class-id bound of a dataset that declares no class count (a folder without a data YAML): per-class
// arrays (the audit's histogram, audit.json's class_counts, a detection head) are sized by the largest
// id, so an id of 2e9 must not reach them. 10,000 is over 8x LVIS' 1,203 classes, the largest common
// detection vocabulary; a dataset with more declares them in a data YAML (whose nc is its own bound).
inline constexpr int kMaxUndeclaredClasses = 10000;

struct ParsedLabels {
  std::vector<Box> boxes;     // kept boxes, file order; empty when has_error()
  std::vector<Issue> issues;  // at most one per code
  size_t rows = 0;            // non-blank rows read
  size_t duplicates = 0;      // rows dropped as duplicates
  size_t zero_size = 0;       // rows dropped for w or h <= 0
  bool segments = false;      // polygon rows were reduced to boxes
  bool has_error() const;
  bool background() const { return rows == 0; }  // empty or whitespace-only file
};

// nc <= 0: the dataset declares no class count, ids must be < kMaxUndeclaredClasses. Reuses out's storage, so a
// caller that keeps one ParsedLabels per thread parses without allocating once warm.
void ParseLabels(std::string_view text, int nc, ParsedLabels* out);
ParsedLabels ParseLabels(std::string_view text, int nc);

}  // namespace yc
