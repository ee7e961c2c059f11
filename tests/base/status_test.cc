#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace yc {
namespace {

Result<int> Parse(const std::string& text) {
  if (text.empty()) return Status::InvalidArgument("empty");
  return static_cast<int>(text.size());
}

Result<int> Twice(const std::string& text) {
  YC_ASSIGN_OR_RETURN(int n, Parse(text));
  return 2 * n;
}

// Move-only values come out moved, and the macro works twice in one scope.
Result<std::unique_ptr<int>> Boxed(int v) {
  if (v < 0) return Status::DataError("negative");
  return std::make_unique<int>(v);
}
Result<int> SumOfBoxes(int a, int b) {
  YC_ASSIGN_OR_RETURN(std::unique_ptr<int> x, Boxed(a));
  YC_ASSIGN_OR_RETURN(auto y, Boxed(b));
  return *x + *y;
}

Status AssignExisting(int* out) {
  int value = 0;
  YC_ASSIGN_OR_RETURN(value, Parse("abc"));
  *out = value;
  return Status::OK();
}

TEST(AssignOrReturn, PassesTheValueOn) {
  Result<int> r = Twice("abcd");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 8);
}

TEST(AssignOrReturn, ReturnsTheFailureUnchanged) {
  Result<int> r = Twice("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "empty");
}

TEST(AssignOrReturn, MovesMoveOnlyValuesAndStacks) {
  Result<int> ok = SumOfBoxes(2, 3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 5);
  Result<int> second_fails = SumOfBoxes(2, -1);
  ASSERT_FALSE(second_fails.ok());
  EXPECT_EQ(second_fails.status().code(), Status::Code::kDataError);
}

TEST(AssignOrReturn, AssignsToAnExistingVariable) {
  int out = 0;
  ASSERT_TRUE(AssignExisting(&out).ok());
  EXPECT_EQ(out, 3);
}

TEST(ExitCodes, FollowTheStatusCode) {
  EXPECT_EQ(ExitCodeFor(Status::OK()), kExitOk);
  EXPECT_EQ(ExitCodeFor(Status::InvalidArgument("x")), kExitUsage);
  EXPECT_EQ(ExitCodeFor(Status::IOError("x")), kExitFatal);
  EXPECT_EQ(ExitCodeFor(Status::Cancelled("x")), kExitInterrupted);
}

}  // namespace
}  // namespace yc
