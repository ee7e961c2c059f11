// Ultralytics' classes= value as trainer/config/class_list.h reads it.
#include "trainer/config/class_list.h"

#include <gtest/gtest.h>

namespace yc::trainer {
namespace {

std::vector<int> Ids(std::string_view text) {
  Result<std::vector<int>> r = ParseClassList(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : std::vector<int>{-1};
}

TEST(ClassList, OneIdOrAListAsUltralyticsWritesThem) {
  EXPECT_EQ(Ids("0"), (std::vector<int>{0}));
  EXPECT_EQ(Ids("[0,2,3]"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(Ids("[0, 2]"), (std::vector<int>{0, 2}));
  EXPECT_EQ(Ids("(5,1)"), (std::vector<int>{5, 1}));
  EXPECT_EQ(Ids("7,7"), (std::vector<int>{7, 7}));
  EXPECT_TRUE(Ids("").empty());
  EXPECT_TRUE(Ids("[]").empty());
}

TEST(ClassList, AnythingButNonNegativeIntegersIsRefusedNamingTheItem) {
  for (const char* bad : {"person", "-1", "1.5", "[0,,2]", "[0,]", "1e2", "99999999999", "[0;1]"}) {
    Result<std::vector<int>> r = ParseClassList(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(std::string("classes=") + bad), std::string::npos) << r.status().message();
  }
  EXPECT_NE(ParseClassList("[0,cat]").status().message().find("'cat' is not a class id"), std::string::npos);
}

}  // namespace
}  // namespace yc::trainer
