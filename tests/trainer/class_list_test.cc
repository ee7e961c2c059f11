// Ultralytics' classes argument in each form its CLI, Python calls and YAML files give it
// (trainer/config/class_list.h), and the values refused with the text and the reason.
#include "trainer/config/class_list.h"

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

TEST(ClassList, UltralyticsForms) {
  const std::vector<std::pair<std::string, std::vector<int32_t>>> rows = {
      {"0", {0}},        {"[0,2]", {0, 2}},   {"[0, 2]", {0, 2}}, {"0,2", {0, 2}},  {"(3, 1)", {3, 1}},
      {" 5 ", {5}},      {"(4,)", {4}},       {"2.0", {2}},       {"[7,7]", {7, 7}}, {"79", {79}},
  };
  for (const auto& [text, want] : rows) {
    Result<std::vector<int32_t>> got = ParseClassList(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().ToString();
    EXPECT_EQ(*got, want) << text;
  }
  EXPECT_EQ(ClassListText({0, 2}), "0,2");
  EXPECT_EQ(*ParseClassList(ClassListText({4, 1, 9})), (std::vector<int32_t>{4, 1, 9}));
}

TEST(ClassList, RefusedNamingTheTextAndTheItem) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"person", "'person' is not a class index"}, {"[0,x]", "'x' is not a class index"},
      {"-1", "'-1' is not a class index (>= 0)"},  {"2.5", "'2.5' is not a class index"},
      {"[]", "no class named"},                    {"0,,2", "an empty item"},
      {"", "no class named"},
  };
  for (const auto& [text, why] : rows) {
    Result<std::vector<int32_t>> got = ParseClassList(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(got.status().message().find("classes '" + text + "'"), std::string::npos) << got.status().message();
    EXPECT_NE(got.status().message().find(why), std::string::npos) << got.status().message();
  }
}

}  // namespace
}  // namespace yc::trainer
