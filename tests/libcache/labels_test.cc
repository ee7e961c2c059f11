#include "libcache/source/labels.h"

#include <cstdio>
#include <random>
#include <string>

#include "libcache/format/record_format.h"

#include <gtest/gtest.h>

namespace yc {
namespace {

const Issue* Find(const ParsedLabels& p, ProblemCode code) {
  for (const Issue& i : p.issues) {
    if (i.code == code) return &i;
  }
  return nullptr;
}

TEST(Labels, PlainBoxes) {
  const ParsedLabels p = ParseLabels("0 0.5 0.5 0.2 0.4\n3 0.1 0.2 0.05 0.06\n", 80);
  ASSERT_TRUE(p.issues.empty());
  ASSERT_EQ(p.boxes.size(), 2u);
  EXPECT_EQ(p.rows, 2u);
  EXPECT_FALSE(p.segments);
  EXPECT_EQ(p.boxes[0].cls, 0);
  EXPECT_FLOAT_EQ(p.boxes[0].cx, 0.5f);
  EXPECT_FLOAT_EQ(p.boxes[0].h, 0.4f);
  EXPECT_EQ(p.boxes[1].cls, 3);
  EXPECT_FLOAT_EQ(p.boxes[1].w, 0.05f);
}

TEST(Labels, WhitespaceVariantsCrlfTabsBlankLinesBom) {
  const std::string text = "\xEF\xBB\xBF  1\t0.5 0.5   0.2 0.2  \r\n\r\n\n   \t\n2 0.25 0.25 0.1 0.1\r3 0.3 0.3 0.1 0.1";
  const ParsedLabels p = ParseLabels(text, 80);
  EXPECT_TRUE(p.issues.empty()) << p.issues[0].message;
  ASSERT_EQ(p.boxes.size(), 3u);
  EXPECT_EQ(p.boxes[0].cls, 1);
  EXPECT_EQ(p.boxes[1].cls, 2);
  EXPECT_EQ(p.boxes[2].cls, 3);
}

TEST(Labels, EmptyAndBlankFilesAreBackground) {
  for (const char* text : {"", "\n\n", "  \r\n\t \n"}) {
    const ParsedLabels p = ParseLabels(text, 80);
    EXPECT_TRUE(p.background()) << text;
    EXPECT_TRUE(p.issues.empty());
    EXPECT_FALSE(p.has_error());
  }
}

TEST(Labels, WrongColumnCountIsErrorWithLine) {
  const ParsedLabels p = ParseLabels("0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2\n0 0.5 0.5 0.2 0.2 0.9\n", 80);
  const Issue* i = Find(p, ProblemCode::kLabelColumns);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->severity, Severity::kError);
  EXPECT_EQ(i->message, "line 2: 4 values, expected 5 (+1 more)");
  EXPECT_TRUE(p.has_error());
  EXPECT_TRUE(p.boxes.empty()) << "an erroneous file keeps no boxes";
}

TEST(Labels, NotANumber) {
  for (const char* bad : {"abc", "nan", "inf", "-inf", "NaN", "1,5", "0x1", "1e", "--1", "+"}) {
    const std::string text = std::string("0 0.5 ") + bad + " 0.2 0.2\n";
    const ParsedLabels p = ParseLabels(text, 80);
    const Issue* i = Find(p, ProblemCode::kLabelNotNumber);
    ASSERT_NE(i, nullptr) << bad;
    EXPECT_EQ(i->severity, Severity::kError);
    EXPECT_EQ(i->message, "line 1: '" + std::string(bad) + "' is not a finite number");
    EXPECT_TRUE(p.has_error());
  }
}

TEST(Labels, PythonFloatSyntaxAccepted) {
  const ParsedLabels p = ParseLabels("+1 .5 5e-1 +0.2 2E-1\n1.0 0.5 0.5 0.2 0.2e0\n", 80);
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_EQ(p.issues[0].code, ProblemCode::kLabelDuplicate) << "the two rows are equal as floats";
  ASSERT_EQ(p.boxes.size(), 1u);
  EXPECT_EQ(p.boxes[0].cls, 1);
  EXPECT_FLOAT_EQ(p.boxes[0].cx, 0.5f);
}

TEST(Labels, OutOfRangeUsesUltralyticsTolerance) {
  EXPECT_TRUE(ParseLabels("0 1.01 -0.01 0.5 0.5\n", 80).issues.empty());
  const ParsedLabels hi = ParseLabels("0 1.02 0.5 0.5 0.5\n", 80);
  const Issue* i = Find(hi, ProblemCode::kLabelOutOfRange);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->message, "line 1: value 1.02 outside [-0.01, 1.01]");
  EXPECT_TRUE(hi.has_error());
  EXPECT_NE(Find(ParseLabels("0 0.5 -0.02 0.5 0.5\n", 80), ProblemCode::kLabelOutOfRange), nullptr);
  EXPECT_NE(Find(ParseLabels("0 0.5 0.5 2 0.5\n", 80), ProblemCode::kLabelOutOfRange), nullptr);
  // Pixel coordinates (a classic export mistake).
  EXPECT_NE(Find(ParseLabels("0 320 240 64 48\n", 80), ProblemCode::kLabelOutOfRange), nullptr);
  // Overflow reads as inf (as Python's float()), which is not a finite number.
  EXPECT_NE(Find(ParseLabels("0 1e400 0.5 0.5 0.5\n", 80), ProblemCode::kLabelNotNumber), nullptr);
  // Underflow reads as 0, as Python's float() does.
  EXPECT_TRUE(ParseLabels("0 1e-400 0.5 0.5 0.5\n", 80).issues.empty());
}

TEST(Labels, ClassChecks) {
  struct Case {
    const char* text;
    int nc;
    const char* message;
  } cases[] = {
      {"80 0.5 0.5 0.2 0.2\n", 80, "line 1: class 80 >= nc 80"},
      {"-1 0.5 0.5 0.2 0.2\n", 80, "line 1: class -1 < 0"},
      {"1.5 0.5 0.5 0.2 0.2\n", 80, "line 1: class 1.5 is not an integer"},
  };
  for (const Case& c : cases) {
    const ParsedLabels p = ParseLabels(c.text, c.nc);
    const Issue* i = Find(p, ProblemCode::kLabelClassOutOfRange);
    ASSERT_NE(i, nullptr) << c.text;
    EXPECT_EQ(i->message, c.message);
    EXPECT_EQ(i->severity, Severity::kError);
  }
  // nc unknown (folder mode): bounded by kMaxUndeclaredClasses, and negatives still fail.
  EXPECT_TRUE(ParseLabels("500 0.5 0.5 0.2 0.2\n", 0).issues.empty());
  EXPECT_TRUE(ParseLabels("-1 0.5 0.5 0.2 0.2\n", 0).has_error());
  EXPECT_EQ(ParseLabels("1e20 0.5 0.5 0.2 0.2\n", 0).issues.at(0).message,
            "line 1: class 1e+20 >= 10000, the limit for a dataset that declares no class count (give one in a data "
            "YAML)");
  EXPECT_EQ(ParseLabels("79 0.5 0.5 0.2 0.2\n", 80).boxes.at(0).cls, 79);
}

TEST(Labels, DuplicatesRemovedWithWarning) {
  const ParsedLabels p =
      ParseLabels("1 0.5 0.5 0.2 0.2\n2 0.1 0.1 0.1 0.1\n1 0.5 0.5 0.2 0.2\n1 0.50 0.5 0.2 0.2\n2 0.1 0.1 0.1 0.1\n", 80);
  const Issue* i = Find(p, ProblemCode::kLabelDuplicate);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->severity, Severity::kWarning);
  EXPECT_EQ(i->message, "3 duplicate rows removed (first at line 3)");
  EXPECT_FALSE(p.has_error());
  EXPECT_EQ(p.duplicates, 3u);
  ASSERT_EQ(p.boxes.size(), 2u);
  EXPECT_EQ(p.boxes[0].cls, 1);  // file order kept
  EXPECT_EQ(p.boxes[1].cls, 2);
}

TEST(Labels, ZeroSizeRowDroppedWithWarning) {
  const ParsedLabels p = ParseLabels("0 0.5 0.5 0 0.2\n0 0.5 0.5 0.2 -0.005\n1 0.5 0.5 0.2 0.2\n", 80);
  const Issue* i = Find(p, ProblemCode::kLabelZeroSize);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->severity, Severity::kWarning);
  EXPECT_EQ(i->message, "line 1: w 0 h 0.2: box without area dropped (+1 more)");
  EXPECT_FALSE(p.has_error());
  EXPECT_EQ(p.zero_size, 2u);
  ASSERT_EQ(p.boxes.size(), 1u);
  EXPECT_EQ(p.boxes[0].cls, 1);
}

TEST(Labels, PolygonsBecomeBoundingBoxes) {
  const ParsedLabels p = ParseLabels("2 0.1 0.2 0.5 0.2 0.5 0.6 0.1 0.6\n", 80);
  ASSERT_TRUE(p.issues.empty());
  EXPECT_TRUE(p.segments);
  ASSERT_EQ(p.boxes.size(), 1u);
  EXPECT_EQ(p.boxes[0].cls, 2);
  EXPECT_FLOAT_EQ(p.boxes[0].cx, 0.3f);
  EXPECT_FLOAT_EQ(p.boxes[0].cy, 0.4f);
  EXPECT_FLOAT_EQ(p.boxes[0].w, 0.4f);
  EXPECT_FLOAT_EQ(p.boxes[0].h, 0.4f);
}

TEST(Labels, SegmentFileReadsEveryRowAsPolygon) {
  // As Ultralytics: once a row has > 6 values, a 5-value row is a 2-point polygon (x1 y1 x2 y2).
  const ParsedLabels p = ParseLabels("0 0.2 0.2 0.6 0.2 0.6 0.8\n1 0.1 0.3 0.5 0.7\n", 80);
  ASSERT_TRUE(p.issues.empty());
  ASSERT_EQ(p.boxes.size(), 2u);
  EXPECT_FLOAT_EQ(p.boxes[1].cx, 0.3f);
  EXPECT_FLOAT_EQ(p.boxes[1].cy, 0.5f);
  EXPECT_FLOAT_EQ(p.boxes[1].w, 0.4f);
  EXPECT_FLOAT_EQ(p.boxes[1].h, 0.4f);
  // An odd number of coordinates cannot be reshaped to points.
  const ParsedLabels odd = ParseLabels("0 0.2 0.2 0.6 0.2 0.6 0.8 0.9\n", 80);
  const Issue* i = Find(odd, ProblemCode::kLabelColumns);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->message, "line 1: 8 values: a polygon row needs a class and x y pairs");
  // Polygon points are range checked.
  EXPECT_NE(Find(ParseLabels("0 0.2 0.2 1.6 0.2 0.6 0.8\n", 80), ProblemCode::kLabelOutOfRange), nullptr);
  // A six-value row does not switch to segments: it is a column error.
  EXPECT_NE(Find(ParseLabels("0 0.2 0.2 0.6 0.2 0.6\n", 80), ProblemCode::kLabelColumns), nullptr);
}

TEST(Labels, RepeatedProblemsReportedOnceWithCount) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "0 2 2 2 2\n";
  const ParsedLabels p = ParseLabels(text, 80);
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_EQ(p.issues[0].message, "line 1: value 2 outside [-0.01, 1.01] (+99 more)");
}

TEST(Labels, MessagesQuoteBinarySafely) {
  static const char kText[] = "0 0.5 \x01\xff\x80zz 0.2 0.2\n";
  const std::string text(kText, sizeof(kText) - 1);
  const ParsedLabels p = ParseLabels(text, 80);
  const Issue* i = Find(p, ProblemCode::kLabelNotNumber);
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->message, "line 1: '???zz' is not a finite number");
}

TEST(Labels, ReuseOfResultAndRandomBytesNeverCrash) {
  std::mt19937 rng(42);
  ParsedLabels out;
  static const char kAlphabet[] = "0123456789.-+eE \t\r\n\v\fnaif\x00\xff";
  const std::string alphabet(kAlphabet, sizeof(kAlphabet) - 1);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text(rng() % 200, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    ParseLabels(text, static_cast<int>(rng() % 5), &out);
    for (const Box& b : out.boxes) {
      EXPECT_GT(b.w, 0);
      EXPECT_GT(b.h, 0);
    }
    if (out.has_error()) {
      EXPECT_TRUE(out.boxes.empty());
    }
  }
}

}  // namespace
}  // namespace yc

namespace yc {
namespace {

TEST(Labels, UndeclaredClassCountIsBounded) {
  EXPECT_EQ(ParseLabels("9999 0.5 0.5 0.2 0.2\n", 0).boxes.at(0).cls, 9999);
  for (const char* text : {"10000 0.5 0.5 0.2 0.2\n", "10000000 0.5 0.5 0.2 0.2\n", "2000000000 0.5 0.5 0.1 0.1\n"}) {
    const ParsedLabels p = ParseLabels(text, 0);
    ASSERT_EQ(p.issues.size(), 1u) << text;
    EXPECT_EQ(p.issues[0].code, ProblemCode::kLabelClassOutOfRange) << text;
    EXPECT_TRUE(p.boxes.empty());
  }
  // A declared count is its own bound, above the folder-mode one too.
  EXPECT_TRUE(ParseLabels("15000 0.5 0.5 0.2 0.2\n", 20000).issues.empty());
}

// `n` distinct box rows (class 0, cx stepping by 2^-22 so every row differs as float32).
std::string DistinctRows(size_t n) {
  std::string text;
  text.reserve(n * 36);
  char row[64];
  for (size_t i = 0; i < n; ++i) {
    const int len = std::snprintf(row, sizeof row, "0 %.9g 0.5 0.01 0.01\n", 0.25 + static_cast<double>(i) / (1 << 22));
    text.append(row, static_cast<size_t>(len));
  }
  return text;
}

TEST(Labels, MoreBoxesThanARecordHoldsIsAnError) {
  std::string text = DistinctRows(size_t{kMaxRecordBoxes} + 1);
  const ParsedLabels over = ParseLabels(text, 80);
  ASSERT_EQ(over.issues.size(), 1u);
  EXPECT_EQ(over.issues[0].code, ProblemCode::kLabelTooManyBoxes);
  EXPECT_EQ(over.issues[0].severity, Severity::kError);
  EXPECT_EQ(over.issues[0].message, "1048577 boxes, more than the 1048576 one image may have");
  EXPECT_TRUE(over.boxes.empty());
  // The limit counts the boxes kept: with one row a duplicate, exactly kMaxRecordBoxes remain.
  text.replace(text.rfind('\n', text.size() - 2) + 1, std::string::npos, "0 0.25 0.5 0.01 0.01\n");
  const ParsedLabels at = ParseLabels(text, 80);
  EXPECT_FALSE(at.has_error());
  EXPECT_EQ(at.boxes.size(), size_t{kMaxRecordBoxes});
  EXPECT_EQ(at.duplicates, 1u);
}

}  // namespace
}  // namespace yc
