// A split as a run uses it (libcache/record_selection.h): Ultralytics' fraction cut (half to even, the
// excluded images counted), classes and single_cls relabelling on every read, through a zstd cache whose
// pixels live in the scratch buffer, and zero copy when the rules change nothing.
#include "libcache/record_selection.h"

#include <cstring>

#include <gtest/gtest.h>

#include "libcache/cache.h"
#include "tests/libcache/cache_test_util.h"

namespace yc {
namespace {

// Records whose only content is their boxes.
class BoxSource final : public RecordSource {
 public:
  explicit BoxSource(std::vector<std::vector<Box>> records) : records_(std::move(records)) {}
  size_t size() const override { return records_.size(); }
  Status Read(size_t index, RecordView* out, ScratchBuffer*) const override {
    *out = RecordView();
    out->index = index;
    out->boxes = records_[index].empty() ? nullptr : records_[index].data();
    out->box_count = records_[index].size();
    return Status::OK();
  }

 private:
  std::vector<std::vector<Box>> records_;
};

SplitManifest SplitWithSources(const std::vector<bool>& kept) {
  SplitManifest s;
  for (size_t i = 0; i < kept.size(); ++i) {
    SourceFingerprint fp;
    fp.path = "images/" + std::to_string(i) + ".jpg";
    fp.record = kept[i] ? static_cast<int64_t>(s.records++) : -1;
    s.excluded += kept[i] ? 0 : 1;
    s.sources.push_back(fp);
  }
  return s;
}

std::vector<int32_t> Classes(const RecordView& v) {
  std::vector<int32_t> c;
  for (size_t i = 0; i < v.box_count; ++i) c.push_back(v.boxes[i].cls);
  return c;
}

TEST(FractionRecords, FirstRoundedShareOfTheListedImagesAsPythonRounds) {
  const SplitManifest ten = SplitWithSources(std::vector<bool>(10, true));
  EXPECT_EQ(FractionRecords(ten, 1.0), 10u);
  EXPECT_EQ(FractionRecords(ten, 0.5), 5u);
  EXPECT_EQ(FractionRecords(ten, 0.25), 2u);  // round(2.5) = 2: half to even
  EXPECT_EQ(FractionRecords(ten, 0.35), 4u);  // round(3.5) = 4
  EXPECT_EQ(FractionRecords(ten, 0.01), 0u);  // round(0.1) = 0: the caller refuses an empty split
  // Ultralytics cuts its file list before it drops corrupt images: an excluded image among the first
  // round(n * fraction) takes a place, one after them does not.
  const SplitManifest gaps = SplitWithSources({true, false, true, true, false, true, true, true});
  EXPECT_EQ(FractionRecords(gaps, 0.5), 3u);  // the first 4 listed: records 0, 1, 2
  EXPECT_EQ(FractionRecords(gaps, 0.75), 4u);  // the first 6 listed
  // Without the sources listed (a bare cache) the records are cut.
  SplitManifest bare = gaps;
  bare.sources.clear();
  EXPECT_EQ(FractionRecords(bare, 0.5), 3u);  // round(6 * 0.5)
}

TEST(SelectedSource, KeepsTheFirstRecordsAndRefusesTheRest) {
  auto base = std::make_shared<BoxSource>(std::vector<std::vector<Box>>(5));
  SelectedSource s(base, 3, {});
  EXPECT_EQ(s.size(), 3u);
  RecordView v;
  ScratchBuffer scratch;
  EXPECT_TRUE(s.Read(2, &v, &scratch).ok());
  const Status st = s.Read(3, &v, &scratch);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("record 3"), std::string::npos) << st.message();
  EXPECT_EQ(SelectedSource(base, 99, {}).size(), 5u);
}

TEST(SelectedSource, ClassesKeepOnlyTheirLabelsAndSingleClsMakesThemZero) {
  const std::vector<Box> boxes = {{3, 0.1f, 0.1f, 0.1f, 0.1f}, {0, 0.2f, 0.2f, 0.1f, 0.1f}, {2, 0.3f, 0.3f, 0.1f, 0.1f},
                                  {3, 0.4f, 0.4f, 0.1f, 0.1f}};
  auto base = std::make_shared<BoxSource>(std::vector<std::vector<Box>>{boxes, {{1, 0.5f, 0.5f, 0.2f, 0.2f}}});
  RecordView v;
  ScratchBuffer scratch;
  SelectedSource only(base, 2, LabelRules{{3, 2}, false});
  ASSERT_TRUE(only.Read(0, &v, &scratch).ok());
  EXPECT_EQ(Classes(v), (std::vector<int32_t>{3, 2, 3}));  // in the stored order
  EXPECT_FLOAT_EQ(v.boxes[1].cx, 0.3f);
  ASSERT_TRUE(only.Read(1, &v, &scratch).ok());
  EXPECT_EQ(v.box_count, 0u);  // the image stays, as a background
  EXPECT_EQ(v.boxes, nullptr);

  SelectedSource single(base, 2, LabelRules{{}, true});
  ASSERT_TRUE(single.Read(0, &v, &scratch).ok());
  EXPECT_EQ(Classes(v), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_FLOAT_EQ(v.boxes[3].cy, 0.4f);
  SelectedSource both(base, 2, LabelRules{{3}, true});  // filtered by the stored class, then made 0
  ASSERT_TRUE(both.Read(0, &v, &scratch).ok());
  EXPECT_EQ(Classes(v), (std::vector<int32_t>{0, 0}));
  EXPECT_FLOAT_EQ(v.boxes[1].cx, 0.4f);
}

TEST(SelectedSource, SingleClsDropsRowsThatBecameDuplicatesInNumpysUniqueOrder) {
  // Rows 0 and 2 differ only in their class: one row once relabelled, and the rows then come in sorted
  // order (verify_image_label's np.unique after single_cls).
  const std::vector<Box> boxes = {{4, 0.6f, 0.5f, 0.1f, 0.1f}, {1, 0.2f, 0.2f, 0.1f, 0.1f}, {2, 0.6f, 0.5f, 0.1f, 0.1f}};
  auto base = std::make_shared<BoxSource>(std::vector<std::vector<Box>>{boxes});
  RecordView v;
  ScratchBuffer scratch;
  SelectedSource single(base, 1, LabelRules{{}, true});
  ASSERT_TRUE(single.Read(0, &v, &scratch).ok());
  ASSERT_EQ(v.box_count, 2u);
  EXPECT_FLOAT_EQ(v.boxes[0].cx, 0.2f);
  EXPECT_FLOAT_EQ(v.boxes[1].cx, 0.6f);
  // Without single_cls they stay two rows of two classes.
  SelectedSource kept(base, 1, LabelRules{{4, 2}, false});
  ASSERT_TRUE(kept.Read(0, &v, &scratch).ok());
  EXPECT_EQ(Classes(v), (std::vector<int32_t>{4, 2}));
}

TEST(SelectedSource, LabelsUntouchedByTheRulesAreTheStoredOnesWithoutACopy) {
  auto base = std::make_shared<BoxSource>(
      std::vector<std::vector<Box>>{{{0, 0.5f, 0.5f, 0.2f, 0.2f}}, {{2, 0.5f, 0.5f, 0.2f, 0.2f}}});
  RecordView stored, v;
  ScratchBuffer scratch;
  ASSERT_TRUE(base->Read(0, &stored, &scratch).ok());
  ASSERT_TRUE(SelectedSource(base, 2, LabelRules{{}, true}).Read(0, &v, &scratch).ok());
  EXPECT_EQ(v.boxes, stored.boxes);  // already class 0
  ASSERT_TRUE(base->Read(1, &stored, &scratch).ok());
  ASSERT_TRUE(SelectedSource(base, 2, LabelRules{{2}, false}).Read(1, &v, &scratch).ok());
  EXPECT_EQ(v.boxes, stored.boxes);  // every label of a listed class
  EXPECT_TRUE(scratch.empty());
}

// zstd records decompress into the scratch buffer: the relabelled boxes go after the pixels, and when
// the buffer has to grow the view's pointers follow it.
TEST(SelectedSource, RelabelsCompressedRecordsWithTheirPixelsIntact) {
  testing::TempDir tmp;
  WriterOptions wo;
  wo.codec.kind = Codec::Kind::kZstd;
  const testing::TestCache built = testing::BuildTestCache(tmp.path() / "c", wo, {{"train", 24}});
  auto cache = Cache::Open(tmp.path() / "c");
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  std::shared_ptr<const Cache> owner = std::move(*cache);
  std::shared_ptr<const RecordSource> split(owner, owner->split("train"));
  SelectedSource single(split, split->size(), LabelRules{{}, true});
  size_t relabelled = 0;
  for (size_t i = 0; i < split->size(); ++i) {
    const testing::SynthRecord& r = built.records.at("train")[i];
    ScratchBuffer fresh;  // grows inside Read: the pointers must be rebased
    RecordView v;
    ASSERT_TRUE(single.Read(i, &v, &fresh).ok()) << i;
    ASSERT_EQ(static_cast<size_t>(v.height * v.width * v.channels), r.pixels.size());
    EXPECT_EQ(std::memcmp(v.pixels, r.pixels.data(), r.pixels.size()), 0) << "record " << i;
    EXPECT_EQ(v.source, r.source);
    ASSERT_LE(v.box_count, r.boxes.size());
    for (size_t k = 0; k < v.box_count; ++k) EXPECT_EQ(v.boxes[k].cls, 0) << "record " << i;
    bool any_nonzero = false;
    for (const Box& b : r.boxes) any_nonzero = any_nonzero || b.cls != 0;
    relabelled += any_nonzero ? 1 : 0;
  }
  EXPECT_GT(relabelled, 5u);  // the test saw records whose labels changed
}

TEST(LabelRules, NamesAndClassesCheckedAgainstTheData) {
  EXPECT_EQ(SelectedNames({"a", "b"}, LabelRules{{}, true}), (std::vector<std::string>{"item"}));
  EXPECT_EQ(SelectedNames({"a", "b"}, LabelRules{{1}, false}), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(CheckLabelRules(LabelRules{{0, 1}, false}, 2).ok());
  const Status st = CheckLabelRules(LabelRules{{0, 5}, false}, 2);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("5 is not a class of this data (0..1)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace yc
