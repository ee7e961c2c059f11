// The loader's option vocabulary (loader/option_table.h): every option reads back what it was set to,
// refuses a wrong type and an unknown value by name, and the choices' spellings round-trip.
#include "loader/option_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace yc {
namespace {

// A value of the option's type different from its default (choices: the last one).
OptionValue OtherValue(const OptionSpec& spec) {
  switch (spec.type) {
    case OptionType::kBool: return !std::get<bool>(spec.default_value);
    case OptionType::kInt: return std::get<int64_t>(spec.default_value) + 1;
    case OptionType::kFloat: return std::get<double>(spec.default_value) + 0.125;
    case OptionType::kChoice: return spec.choices.back() == std::get<std::string>(spec.default_value)
                                         ? spec.choices.front()
                                         : spec.choices.back();
  }
  return false;
}

TEST(OptionTable, EveryOptionReadsBackItsDefaultAndWhatItWasSetTo) {
  std::set<std::string> names, flags;
  for (const OptionSpec& spec : LoaderOptionTable()) {
    SCOPED_TRACE(spec.name);
    EXPECT_TRUE(names.insert(spec.name).second) << "listed twice";
    EXPECT_TRUE(flags.insert(spec.flag).second) << "flag listed twice";
    EXPECT_EQ(spec.flag.rfind("--", 0), 0u);
    EXPECT_FALSE(spec.help.empty());
    LoaderOptions defaulted;
    ASSERT_TRUE(SetLoaderOption(spec.name, spec.default_value, &defaulted).ok());
    EXPECT_EQ(spec.get(defaulted), spec.get(LoaderOptions())) << "the default is LoaderOptions' own";
    EXPECT_EQ(spec.type == OptionType::kChoice, !spec.choices.empty());
    LoaderOptions o;
    const OptionValue other = OtherValue(spec);
    ASSERT_TRUE(SetLoaderOption(spec.name, other, &o).ok());
    EXPECT_EQ(spec.get(o), other);
    EXPECT_NE(spec.get(o), spec.get(LoaderOptions()));
  }
  EXPECT_EQ(FindLoaderOption("window_mb")->flag, "--window");  // the CLIs' names from before Python had them
  EXPECT_EQ(FindLoaderOption("hsv_h")->flag, "--hsv-h");
}

TEST(OptionTable, TheHyperparametersAreUltralyticsDataHyperparameters) {
  std::set<std::string> hyps;
  for (const OptionSpec& spec : LoaderOptionTable())
    if (spec.hyp) hyps.insert(spec.name);
  const std::set<std::string> expected = {"mosaic", "mixup", "cutmix", "copy_paste", "copy_paste_mode", "degrees",
                                          "translate", "scale", "shear", "perspective", "hsv_h", "hsv_s", "hsv_v",
                                          "flipud", "fliplr", "bgr", "close_mosaic"};
  EXPECT_EQ(hyps, expected);
  LoaderOptions o;
  ASSERT_TRUE(SetLoaderOption("copy_paste_mode", std::string("mixup"), &o).ok());
  EXPECT_EQ(o.hyp.copy_paste_mode, CopyPasteMode::kMixup);
  const Status bad = SetLoaderOption("copy_paste_mode", std::string("paste"), &o);
  EXPECT_NE(bad.message().find("'copy_paste_mode': expected flip or mixup, got 'paste'"), std::string::npos)
      << bad.message();
  ASSERT_TRUE(SetLoaderOption("hsv_h", 0.5, &o).ok());
  EXPECT_EQ(o.hyp.hsv_h, 0.5);
  ASSERT_TRUE(SetLoaderOption("close_mosaic", int64_t{3}, &o).ok());
  EXPECT_EQ(o.hyp.close_mosaic, 3);
}

TEST(OptionTable, WrongTypesAndUnknownNamesAndValuesAreRefusedByName) {
  LoaderOptions o;
  Status st = SetLoaderOption("mosiac", 1.0, &o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("unknown loader option 'mosiac'"), std::string::npos) << st.message();
  st = SetLoaderOption("batch", 2.5, &o);
  EXPECT_NE(st.message().find("'batch': expected int"), std::string::npos) << st.message();
  st = SetLoaderOption("close_mosaic", 2.5, &o);
  EXPECT_NE(st.message().find("expected int"), std::string::npos) << st.message();
  st = SetLoaderOption("shuffle", int64_t{1}, &o);
  EXPECT_NE(st.message().find("expected bool"), std::string::npos) << st.message();
  st = SetLoaderOption("window_io", std::string("mmap"), &o);
  EXPECT_NE(st.message().find("'window_io': expected auto, direct or page-cache, got 'mmap'"), std::string::npos)
      << st.message();
  st = SetLoaderOption("seed", int64_t{-1}, &o);
  EXPECT_NE(st.message().find("'seed': must be >= 0"), std::string::npos) << st.message();
  st = SetLoaderOption("window_mb", 0.5, &o);
  EXPECT_NE(st.message().find("'window_mb': must be >= 1.0 (MiB), got 0.5"), std::string::npos) << st.message();
  st = SetLoaderOption("degrees", std::nan(""), &o);
  EXPECT_NE(st.message().find("'degrees': must be finite"), std::string::npos) << st.message();
  EXPECT_TRUE(SetLoaderOption("scale", int64_t{0}, &o).ok()) << "an int is a float";
}

TEST(OptionTable, ChoicesRoundTripAndWindowIoAutoFollowsTheRanks) {
  for (const char* text : {"train", "val"}) EXPECT_STREQ(LoaderModeName(*ParseLoaderMode(text)), text);
  for (const char* text : {"shuffle", "windowed"}) EXPECT_STREQ(SampleOrderName(*ParseSampleOrder(text)), text);
  for (const char* text : {"direct", "page-cache"}) EXPECT_STREQ(WindowIoName(*ParseWindowIo(text, 1)), text);
  EXPECT_EQ(*ParseWindowIo("auto", 1), WindowIo::kDirect);
  EXPECT_EQ(*ParseWindowIo("auto", 2), WindowIo::kPageCache);
  EXPECT_EQ(*ParseWindowIo("direct", 8), WindowIo::kDirect);
  EXPECT_FALSE(ParseWindowIo("mmap", 1).ok());
  // SetLoaderOptions applies the table's order: world_size before window_io whatever order they come in.
  LoaderOptions o;
  ASSERT_TRUE(SetLoaderOptions({{"window_io", std::string("auto")}, {"world_size", int64_t{2}}}, &o).ok());
  EXPECT_EQ(o.window_io, WindowIo::kPageCache);
  EXPECT_FALSE(SetLoaderOptions({{"world_size", int64_t{2}}, {"nope", true}}, &o).ok());
}

TEST(OptionTable, MarkdownHasOneRowPerOptionAndEscapesBars) {
  for (bool hyp : {false, true}) {
    const std::string md = LoaderOptionsMarkdown(hyp);
    size_t rows = 0;
    for (const OptionSpec& spec : LoaderOptionTable()) {
      if (spec.hyp != hyp) continue;
      ++rows;
      EXPECT_NE(md.find("| `" + spec.name + "` | "), std::string::npos) << spec.name;
    }
    EXPECT_EQ(static_cast<size_t>(std::count(md.begin(), md.end(), '\n')), rows + 2);
  }
  EXPECT_NE(LoaderOptionsMarkdown(false).find("`auto` \\| `direct` \\| `page-cache`"), std::string::npos);
  EXPECT_EQ(OptionText(1.0), "1.0");
  EXPECT_EQ(OptionText(0.015), "0.015");
}

}  // namespace
}  // namespace yc
