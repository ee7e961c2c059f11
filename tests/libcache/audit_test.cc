#include "libcache/source/audit.h"

#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libcache/format/record_format.h"
#include "tests/libcache/ingest_test_util.h"
#include "tests/test_support.h"

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

std::string Describe(const std::vector<Problem>& problems) {
  std::string s;
  for (const Problem& p : problems) {
    s += std::string(SeverityName(p.severity)) + " " + ProblemCodeName(p.code) + " " + p.file + ": " + p.message + "\n";
  }
  return s;
}

SourceItem Item(const fs::path& root, const std::string& rel) {
  const fs::path image = root / rel;
  const fs::path label = LabelPathFor(image);
  return {image, label, rel, RelativePath(root, label)};
}

TEST(Problem, NamesAreStable) {
  const char* expected[] = {"unreadable",       "empty-file",         "unsupported-format",       "extension-mismatch",
                            "truncated",        "corrupt-data",       "too-small",                "label-columns",
                            "label-not-number", "label-out-of-range", "label-class-out-of-range", "label-duplicate",
                            "label-zero-size",  "label-orphan",       "duplicate-image",          "not-regular-file",
                            "label-too-many-boxes"};
  ASSERT_EQ(std::size(expected), static_cast<size_t>(kProblemCodeCount));
  for (int i = 0; i < kProblemCodeCount; ++i) {
    EXPECT_STREQ(ProblemCodeName(static_cast<ProblemCode>(i)), expected[i]);
    EXPECT_EQ(ProblemCodeFromName(expected[i]), static_cast<ProblemCode>(i));
  }
  EXPECT_FALSE(ProblemCodeFromName("nope").has_value());
  const Problem p{"train", "images/a.jpg", "why", ProblemCode::kLabelDuplicate, Severity::kWarning};
  const nlohmann::json j = p;
  EXPECT_EQ(j, nlohmann::json::parse(R"({"split":"train","file":"images/a.jpg","severity":"warning",
                                         "code":"label-duplicate","message":"why"})"));
  EXPECT_EQ(j.get<Problem>().code, ProblemCode::kLabelDuplicate);
}

TEST(ScanImage, SyntheticDatasetCases) {
  TempDir d;
  const std::string jpeg = testing::MakeJpeg(testing::Blocks(64, 48));
  WriteFile(d / "images/ok.jpg", jpeg);
  WriteFile(d / "labels/ok.txt", "1 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n");
  WriteFile(d / "images/bg.jpg", jpeg);  // no label
  WriteFile(d / "images/empty_label.jpg", jpeg + "");
  WriteFile(d / "labels/empty_label.txt", "\n");
  WriteFile(d / "images/bad_label.jpg", jpeg);
  WriteFile(d / "labels/bad_label.txt", "7 0.5 0.5 0.2 0.2\n");
  fs::create_directories(d / "images/dir.jpg");

  ScanOptions opt;
  opt.nc = 5;
  opt.split = "train";
  opt.keep_pixels = true;
  opt.imgsz = 32;
  const ScannedImage ok = ScanImage(Item(d.path(), "images/ok.jpg"), opt);
  EXPECT_FALSE(ok.excluded);
  EXPECT_FALSE(ok.background);
  ASSERT_EQ(ok.boxes.size(), 1u);
  EXPECT_EQ(ok.rgb.size(), cv::Size(32, 24));
  EXPECT_EQ(ok.orig_w, 64);
  EXPECT_EQ(ok.file_size, jpeg.size());
  ASSERT_EQ(ok.problems.size(), 1u) << Describe(ok.problems);
  EXPECT_EQ(ok.problems[0].code, ProblemCode::kLabelDuplicate);
  EXPECT_EQ(ok.problems[0].file, "labels/ok.txt");
  EXPECT_EQ(ok.problems[0].split, "train");

  const ScannedImage bg = ScanImage(Item(d.path(), "images/bg.jpg"), opt);
  EXPECT_TRUE(bg.problems.empty());
  EXPECT_TRUE(bg.background);
  EXPECT_FALSE(bg.label_found);
  EXPECT_EQ(bg.hash, ok.hash);
  const ScannedImage el = ScanImage(Item(d.path(), "images/empty_label.jpg"), opt);
  EXPECT_TRUE(el.problems.empty());
  EXPECT_TRUE(el.background);
  EXPECT_TRUE(el.label_found);

  const ScannedImage bl = ScanImage(Item(d.path(), "images/bad_label.jpg"), opt);
  EXPECT_TRUE(bl.excluded);
  EXPECT_TRUE(bl.rgb.empty());
  EXPECT_TRUE(bl.boxes.empty());
  ASSERT_EQ(bl.problems.size(), 1u);
  EXPECT_EQ(bl.problems[0].code, ProblemCode::kLabelClassOutOfRange);
  EXPECT_EQ(bl.problems[0].message, "line 1: class 7 >= nc 5");

  const ScannedImage missing = ScanImage(Item(d.path(), "images/missing.jpg"), opt);
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_EQ(missing.problems[0].code, ProblemCode::kUnreadable);
  EXPECT_EQ(missing.problems[0].message, "cannot read image: No such file or directory");
  EXPECT_TRUE(missing.excluded);
  const ScannedImage dir = ScanImage(Item(d.path(), "images/dir.jpg"), opt);
  ASSERT_EQ(dir.problems.size(), 1u);
  EXPECT_EQ(dir.problems[0].code, ProblemCode::kNotRegularFile);
  EXPECT_EQ(dir.problems[0].message, "image is not a regular file (a directory)");
}

TEST(AuditSplit, DuplicatesOrphansSummaryJson) {
  TempDir d;
  const std::string a = testing::MakeJpeg(testing::Blocks(64, 48));
  const std::string b = testing::MakeJpeg(testing::Blocks(48, 64));
  WriteFile(d / "images/1.jpg", a);
  WriteFile(d / "labels/1.txt", "0 0.5 0.5 0.2 0.2\n2 0.1 0.1 0.1 0.1\n");
  WriteFile(d / "images/2.jpg", b);
  WriteFile(d / "labels/2.txt", "2 0.5 0.5 0.2 0.2\n");
  WriteFile(d / "images/3.jpg", a);  // same bytes as 1.jpg, no label
  WriteFile(d / "images/4.jpg", a.substr(0, a.size() * 3 / 4));
  WriteFile(d / "labels/4.txt", "1 0.5 0.5 0.2 0.2\n");
  WriteFile(d / "labels/orphan.txt", "0 0.5 0.5 0.2 0.2\n");

  DatasetSpec spec;
  spec.root = d.path();
  Result<std::vector<SourceItem>> items = ListSplitFiles(spec, SplitSpec{"train", {d / "images"}});
  ASSERT_TRUE(items.ok());
  ScanOptions opt;
  opt.nc = 3;
  opt.keep_pixels = true;  // ignored by the audit
  AuditContext ctx;
  ctx.root = d.path();
  std::atomic<size_t> calls{0};
  ctx.progress = [&](size_t, size_t total) {
    EXPECT_EQ(total, 4u);
    ++calls;
  };
  const SplitAudit audit = AuditSplit("train", *items, opt, ctx);
  EXPECT_EQ(calls.load(), 4u);
  ASSERT_EQ(audit.images.size(), 4u);
  for (const ScannedImage& s : audit.images) EXPECT_TRUE(s.rgb.empty());

  const AuditSummary& s = audit.summary;
  EXPECT_EQ(s.images, 4u);
  EXPECT_EQ(s.ok, 2u);
  EXPECT_EQ(s.backgrounds, 1u);
  EXPECT_EQ(s.excluded, 1u);
  EXPECT_EQ(s.boxes, 3u);
  EXPECT_EQ(s.class_counts, (std::vector<size_t>{1, 0, 2}));
  EXPECT_EQ(s.errors, 1u);
  EXPECT_EQ(s.warnings, 2u);

  ASSERT_EQ(audit.problems.size(), 3u) << Describe(audit.problems);
  EXPECT_EQ(audit.problems[0].code, ProblemCode::kTruncated);
  EXPECT_EQ(audit.problems[0].file, "images/4.jpg");
  EXPECT_EQ(audit.problems[1].code, ProblemCode::kDuplicateImage);
  EXPECT_EQ(audit.problems[1].file, "images/3.jpg");
  EXPECT_EQ(audit.problems[1].message, "same bytes as images/1.jpg");
  EXPECT_EQ(audit.problems[1].severity, Severity::kWarning);
  EXPECT_FALSE(audit.images[2].excluded) << "duplicates are kept";
  EXPECT_EQ(audit.problems[2].code, ProblemCode::kLabelOrphan);
  EXPECT_EQ(audit.problems[2].file, "labels/orphan.txt");

  const nlohmann::json j = s;
  EXPECT_EQ(j["images"], 4);
  EXPECT_EQ(j["ok"], 2);
  EXPECT_EQ(j["backgrounds"], 1);
  EXPECT_EQ(j["excluded"], 1);
  EXPECT_EQ(j["boxes"], 3);
  EXPECT_EQ(j["problem_counts"], nlohmann::json::parse(R"({"truncated":1,"duplicate-image":1,"label-orphan":1})"));
  const nlohmann::json ja = audit;
  EXPECT_EQ(ja["split"], "train");
  EXPECT_EQ(ja["problems"][0]["code"], "truncated");
  EXPECT_EQ(ja["problems"][0]["severity"], "error");
}

TEST(AuditSplit, Cancel) {
  TempDir d;
  WriteFile(d / "images/1.jpg", testing::MakeJpeg(testing::Blocks(16, 16)));
  DatasetSpec spec;
  spec.root = d.path();
  Result<std::vector<SourceItem>> items = ListSplitFiles(spec, SplitSpec{"train", {d / "images"}});
  ASSERT_TRUE(items.ok());
  std::atomic<bool> cancel{true};
  AuditContext ctx;
  ctx.cancel = &cancel;
  const SplitAudit audit = AuditSplit("train", *items, ScanOptions{}, ctx);
  EXPECT_TRUE(audit.cancelled);
  EXPECT_EQ(audit.summary.images, 0u);
}

TEST(AuditDataset, CrossSplitDuplicates) {
  TempDir d;
  const std::string a = testing::MakeJpeg(testing::Blocks(64, 48));
  WriteFile(d / "images/train/1.jpg", a);
  WriteFile(d / "images/val/1.jpg", a);
  WriteFile(d / "labels/train/1.txt", "0 0.5 0.5 0.2 0.2\n");
  WriteFile(d / "labels/val/1.txt", "0 0.5 0.5 0.2 0.2\n");
  WriteFile(d / "data.yaml", "train: images/train\nval: images/val\nnames: [a]\n");
  Result<DatasetSpec> spec = LoadDatasetSpec(d / "data.yaml");
  ASSERT_TRUE(spec.ok());
  Result<DatasetAudit> audit = AuditDataset(*spec, ScanOptions{});
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->splits.size(), 2u);
  EXPECT_TRUE(audit->splits[0].problems.empty());
  ASSERT_EQ(audit->splits[1].problems.size(), 1u);
  EXPECT_EQ(audit->splits[1].problems[0].message, "same bytes as images/train/1.jpg in split train");
  EXPECT_EQ(audit->total.images, 2u);
  EXPECT_EQ(audit->total.warnings, 1u);
}

// ---- Acceptance on real data ----

TEST(AuditCoco128, TrainSplitFindings) {
  YC_REQUIRE_SHARED(coco, "coco128");
  Result<DatasetSpec> spec = LoadDatasetSpec(coco / "coco128.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->names.size(), 80u);
  Result<DatasetAudit> audit = AuditDataset(*spec, ScanOptions{});
  ASSERT_TRUE(audit.ok()) << audit.status().ToString();
  ASSERT_EQ(audit->splits.size(), 2u);
  const SplitAudit& train = audit->splits[0];
  const SplitAudit& val = audit->splits[1];

  EXPECT_EQ(audit->total.errors, 0u) << Describe(train.problems) << Describe(val.problems);
  EXPECT_EQ(train.summary.images, 128u);
  EXPECT_EQ(train.summary.backgrounds, 2u);
  EXPECT_EQ(train.summary.excluded, 0u);
  EXPECT_EQ(train.summary.ok, 126u);
  // SOURCE.md counts 941 rows in labels/train2017, 12 of them in the two orphan files.
  EXPECT_EQ(train.summary.boxes, 941u - 12u);
  EXPECT_EQ(val.summary.images, 128u);
  EXPECT_EQ(val.summary.boxes, 898u);
  EXPECT_EQ(val.summary.backgrounds, 0u);

  Result<std::vector<SourceItem>> items = ListSplitFiles(*spec, spec->splits[0]);
  ASSERT_TRUE(items.ok());
  std::set<std::string> backgrounds;
  for (size_t i = 0; i < items->size(); ++i) {
    if (train.images[i].background) backgrounds.insert(fs::path((*items)[i].rel).stem().string());
  }
  EXPECT_EQ(backgrounds, (std::set<std::string>{"000000000250", "000000000508"}));

  std::vector<std::string> orphans;
  for (const Problem& p : train.problems) {
    if (p.code == ProblemCode::kLabelOrphan) orphans.push_back(p.file);
  }
  EXPECT_EQ(orphans, (std::vector<std::string>{"labels/train2017/000000000656.txt", "labels/train2017/000000000659.txt"}));
  EXPECT_EQ(train.summary.problem_counts[static_cast<size_t>(ProblemCode::kLabelOrphan)], 2u);
  EXPECT_TRUE(val.problems.empty()) << Describe(val.problems);

  // The two grayscale JPEGs come out as 3-channel RGB.
  ScanOptions pix;
  pix.keep_pixels = true;
  pix.imgsz = 640;
  pix.nc = 80;
  for (const char* rel : {"images/train2017/000000000086.jpg", "images/val2017/000000007888.jpg"}) {
    const ScannedImage s = ScanImage(Item(spec->root, rel), pix);
    EXPECT_TRUE(s.problems.empty()) << rel << Describe(s.problems);
    ASSERT_EQ(s.rgb.type(), CV_8UC3) << rel;
    EXPECT_EQ(std::max(s.rgb.cols, s.rgb.rows), 640) << rel;
    std::vector<cv::Mat> ch;
    cv::split(s.rgb, ch);
    EXPECT_EQ(cv::norm(ch[0], ch[1], cv::NORM_INF), 0) << "grey in, grey out";
  }
}

// Every odd image gets a verdict with a reason. The table must cover the whole folder.
struct Verdict {
  const char* file;
  // With imgcodecs / without: the problem that decides (nullopt: clean).
  std::optional<ProblemCode> code;
  Severity severity;
  std::optional<ProblemCode> code_no_imgcodecs;
  int w = 0, h = 0;  // oriented size when decodable (0: don't check)
};

constexpr auto E = Severity::kError;
constexpr auto W = Severity::kWarning;
const std::optional<ProblemCode> kClean;
const auto kUnsupported = std::optional<ProblemCode>(ProblemCode::kUnsupportedFormat);

const Verdict kOddImages[] = {
    {"Landscape_0.jpg", kClean, E, kClean, 1800, 1200},
    {"Landscape_6.jpg", kClean, E, kClean, 1800, 1200},
    {"Portrait_6.jpg", kClean, E, kClean, 1200, 1800},
    {"apng_mode_16bit.png", kClean, E, kUnsupported, 128, 64},
    {"app13-multiple.jpg", kClean, E, kClean, 256, 160},
    {"bmpsuite_shortfile.bmp", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"broken.png", ProblemCode::kCorruptData, E, ProblemCode::kCorruptData},
    {"broken_data_stream.png", ProblemCode::kCorruptData, E, ProblemCode::kCorruptData},
    {"coco_000000000030_cut60pct.jpg", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"coco_000000000030_no_eoi.jpg", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"empty_gps_ifd.jpg", kClean, E, kClean, 10, 10},
    {"hopper.webp", kClean, E, kUnsupported, 128, 128},
    {"hopper_16bit_qtables.jpg", kClean, E, kClean, 128, 128},
    {"hopper_gray.jpg", kClean, E, kClean, 128, 128},
    {"hopper_rle8.bmp", kClean, E, kUnsupported, 128, 128},
    {"i_trns.png", kClean, E, kUnsupported, 64, 64},
    {"invalid-exif.jpg", kClean, E, kClean, 200, 200},
    {"itxt_chunks.png", kClean, E, kUnsupported, 2400, 2000},
    {"junk_jpeg_header.jpg", ProblemCode::kCorruptData, W, ProblemCode::kCorruptData, 1024, 768},
    {"l2rgb_read.bmp", ProblemCode::kCorruptData, E, ProblemCode::kCorruptData},
    {"monkey12.jpg", ProblemCode::kUnsupportedFormat, E, kUnsupported},
    {"monkey16.png", kClean, E, kUnsupported, 149, 227},
    {"multiple_exif.jpg", ProblemCode::kTooSmall, E, ProblemCode::kTooSmall, 1, 1},
    {"orientation_rectangle.jpg", ProblemCode::kTooSmall, E, ProblemCode::kTooSmall, 1, 2},
    {"photoshop-200dpi-broken.jpg", ProblemCode::kCorruptData, W, ProblemCode::kCorruptData, 200, 200},
    {"pil123p.png", kClean, E, kUnsupported, 162, 150},
    {"pil_sample_cmyk.jpg", kClean, E, kClean, 100, 100},
    {"png_decompression_dos.png", ProblemCode::kTooSmall, E, kUnsupported, 1, 1},
    {"png_named_as.jpg", ProblemCode::kExtensionMismatch, W, kUnsupported, 128, 128},
    {"sugarshack_bad_mpo_header.jpg", kClean, E, kClean, 640, 480},
    {"tRNS_null_1x1.png", ProblemCode::kTooSmall, E, kUnsupported, 1, 1},
    {"testimgari.jpg", kClean, E, kClean, 227, 149},
    {"truncated_app14.jpg", ProblemCode::kCorruptData, W, ProblemCode::kCorruptData, 100, 100},
    {"truncated_end_chunk.png", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"truncated_exif_dpi.jpg", kClean, E, kClean, 480, 640},
    {"truncated_image.png", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"truncated_jpeg.jpg", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"ultrahdr.jpg", ProblemCode::kTruncated, E, ProblemCode::kTruncated},
    {"unknown_compression_method.png", kClean, E, kUnsupported, 57, 57},
    {"xmp_no_prefix.jpg", ProblemCode::kTooSmall, E, ProblemCode::kTooSmall, 1, 1},
    {"zero_bytes.jpg", ProblemCode::kEmptyFile, E, ProblemCode::kEmptyFile},
};

TEST(AuditOddImages, EveryFileHasTheExpectedVerdict) {
  YC_REQUIRE_SHARED(dir, "odd-images");
  const bool imgcodecs = DecoderHasImgcodecs();
  std::set<std::string> on_disk, in_table;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != "SOURCE.md") on_disk.insert(e.path().filename().string());
  }
  for (const Verdict& v : kOddImages) in_table.insert(v.file);
  EXPECT_EQ(on_disk, in_table) << "a file without an expected verdict (or a verdict without a file)";

  for (bool keep_pixels : {false, true}) {
    ScanOptions opt;
    opt.keep_pixels = keep_pixels;
    opt.imgsz = 320;
    for (const Verdict& v : kOddImages) {
      SCOPED_TRACE(std::string(v.file) + (keep_pixels ? " (pixels)" : " (verify)"));
      const ScannedImage s = ScanImage(Item(dir, v.file), opt);
      const std::optional<ProblemCode> want = imgcodecs ? v.code : v.code_no_imgcodecs;
      if (!want) {
        EXPECT_TRUE(s.problems.empty()) << Describe(s.problems);
        EXPECT_FALSE(s.excluded);
      } else {
        bool found = false;
        for (const Problem& p : s.problems) {
          EXPECT_FALSE(p.message.empty());
          if (p.code == *want) found = true;
        }
        EXPECT_TRUE(found) << "want " << ProblemCodeName(*want) << ", got:\n" << Describe(s.problems);
        // Without imgcodecs, a verdict that changes to unsupported-format is an error.
        const Severity sev = (imgcodecs || v.code == v.code_no_imgcodecs) ? v.severity : Severity::kError;
        EXPECT_EQ(s.excluded, sev == Severity::kError) << Describe(s.problems);
      }
      if (v.w > 0 && (imgcodecs || v.code_no_imgcodecs == v.code)) {
        EXPECT_EQ(s.orig_w, v.w);
        EXPECT_EQ(s.orig_h, v.h);
      }
      if (keep_pixels && !s.excluded) {
        ASSERT_EQ(s.rgb.type(), CV_8UC3);
        EXPECT_EQ(std::max(s.rgb.cols, s.rgb.rows), 320);
      }
    }
  }
}

}  // namespace
}  // namespace yc

namespace yc {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

TEST(AuditSplit, FolderModeClassIdsAreBoundedAndExcludedImagesCountNoBoxes) {
  TempDir d;
  const std::string jpeg = testing::MakeJpeg(testing::Blocks(32, 32));
  WriteFile(d / "images/a.jpg", jpeg);
  WriteFile(d / "labels/a.txt", "2000000000 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.2 0.2\n");
  WriteFile(d / "images/b.jpg", testing::MakeJpeg(testing::Blocks(32, 40)));
  WriteFile(d / "labels/b.txt", "10000000 0.5 0.5 0.1 0.1\n");
  WriteFile(d / "images/c.jpg", testing::MakeJpeg(testing::Blocks(40, 32)));
  WriteFile(d / "labels/c.txt", "7 0.5 0.5 0.1 0.1\n");
  DatasetSpec spec;
  spec.root = d.path();
  Result<std::vector<SourceItem>> items = ListSplitFiles(spec, SplitSpec{"train", {d / "images"}});
  ASSERT_TRUE(items.ok());
  const SplitAudit audit = AuditSplit("train", *items, ScanOptions{});  // nc 0: no declared class count
  EXPECT_EQ(audit.summary.problem_counts[static_cast<size_t>(ProblemCode::kLabelClassOutOfRange)], 2u)
      << Describe(audit.problems);
  EXPECT_EQ(audit.summary.excluded, 2u);
  EXPECT_EQ(audit.summary.boxes, 1u) << "a.jpg's valid row is not counted: the image is excluded";
  EXPECT_EQ(audit.summary.class_counts, std::vector<size_t>({0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_LT(nlohmann::json(audit).dump().size(), 2000u);
}

TEST(AuditSplit, TooManyBoxesExcludesTheImage) {
  TempDir d;
  WriteFile(d / "images/a.jpg", testing::MakeJpeg(testing::Blocks(32, 32)));
  std::string rows;
  char row[64];
  for (uint32_t i = 0; i <= kMaxRecordBoxes; ++i) {
    rows.append(row, static_cast<size_t>(std::snprintf(row, sizeof row, "1 %.9g 0.5 0.01 0.01\n",
                                                       0.25 + static_cast<double>(i) / (1 << 22))));
  }
  WriteFile(d / "labels/a.txt", rows);
  const SplitAudit audit = AuditSplit("train", {Item(d.path(), "images/a.jpg")}, ScanOptions{});
  ASSERT_EQ(audit.problems.size(), 1u) << Describe(audit.problems);
  EXPECT_EQ(audit.problems[0].code, ProblemCode::kLabelTooManyBoxes);
  EXPECT_EQ(audit.problems[0].file, "labels/a.txt");
  EXPECT_EQ(audit.summary.excluded, 1u);
  EXPECT_EQ(audit.summary.boxes, 0u);
}

TEST(ScanImage, OutOfMemoryIsFatalNotACorruptImage) {
  if (testing::kSanitizedBuild) GTEST_SKIP() << "ASan reserves terabytes of address space: no memory cap possible";
  TempDir d;
  WriteFile(d / "images/big.jpg", testing::WithSofSize(testing::MakeJpeg(testing::Blocks(16, 16)), 8000, 8000));
  WriteFile(d / "labels/big.txt", "0 0.5 0.5 0.2 0.2\n");
  const SourceItem item = Item(d.path(), "images/big.jpg");
  const std::string out = testing::UnderMemoryCap(uint64_t{16} << 20, [&] {
    ScanOptions opt;
    opt.keep_pixels = true;  // the build's scan: a 192 MB decode
    const ScannedImage s = ScanImage(item, opt);
    return s.fatal.ToString() + "|" + Describe(s.problems) + "|" + (s.excluded ? "excluded" : "");
  });
  const std::string want = "resource exhausted: out of memory while decoding " + (d / "images/big.jpg").string() + " (";
  EXPECT_EQ(out.rfind(want, 0), 0u) << out;
  EXPECT_EQ(out.substr(out.find('|')), "||") << "no problem recorded, not excluded: " << out;
}

}  // namespace
}  // namespace yc
