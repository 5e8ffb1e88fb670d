#include "core/error.h"

#include <gtest/gtest.h>

#include "core/ids.h"

namespace cuda_agent {
namespace {

Expected<int> parse_positive(int v) {
  if (v <= 0)
    return make_error(ErrorCategory::kInvalidInput, "test.not_positive",
                      "got " + std::to_string(v));
  return v;
}

Expected<int> doubled(int v) {
  ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check(int v) {
  RETURN_IF_ERROR(parse_positive(v));
  return Status::ok();
}

TEST(Error, ToStringNamesCategoryCodeAndMessage) {
  Error e = make_error(ErrorCategory::kTimeout, "broker.deadline", "request r-1 expired");
  EXPECT_EQ(e.to_string(), "timeout/broker.deadline: request r-1 expired");
  EXPECT_EQ(e.with_context("compile").message, "compile: request r-1 expired");
  EXPECT_EQ(e.with_context("compile").code, "broker.deadline");
}

TEST(Error, ExpectedCarriesValueOrError) {
  EXPECT_EQ(*doubled(4), 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "test.not_positive");
  EXPECT_EQ(bad.error().message, "got -1");
  EXPECT_TRUE(check(3));
  EXPECT_EQ(check(0).error().category, ErrorCategory::kInvalidInput);
}

// A type a std::string converts to implicitly, as the pool's PoolBytes.
struct Wrapped {
  Wrapped(std::string s) : text(std::move(s)) {}  // NOLINT: implicit, as under test
  std::string text;
};

Expected<std::string> named(bool ok) {
  if (!ok) return make_error(ErrorCategory::kNotFound, "test.absent", "no name");
  return std::string("kernel");
}

TEST(Error, ExpectedConvertsFromValuesAndExpectedsOfConvertibleTypes) {
  Expected<Wrapped> from_value = std::string("a");
  ASSERT_TRUE(from_value);
  EXPECT_EQ(from_value->text, "a");
  Expected<Wrapped> from_expected = named(true);
  ASSERT_TRUE(from_expected);
  EXPECT_EQ(from_expected->text, "kernel");
  Expected<Wrapped> from_error = named(false);
  ASSERT_FALSE(from_error);
  EXPECT_EQ(from_error.error().code, "test.absent");
  // Not implicitly convertible (std::string's constructor from a string_view is explicit).
  static_assert(!std::is_convertible_v<Expected<std::string_view>, Expected<std::string>>);
  static_assert(!std::is_convertible_v<Expected<int>, Expected<Error>>);
}

TEST(Error, EveryCategoryHasAStableName) {
  EXPECT_EQ(to_string(ErrorCategory::kInvalidInput), "invalid_input");
  EXPECT_EQ(to_string(ErrorCategory::kNotFound), "not_found");
  EXPECT_EQ(to_string(ErrorCategory::kIo), "io");
  EXPECT_EQ(to_string(ErrorCategory::kUnavailable), "unavailable");
  EXPECT_EQ(to_string(ErrorCategory::kPolicy), "policy");
  EXPECT_EQ(to_string(ErrorCategory::kInternal), "internal");
}

TEST(Ids, StrongIdsCompareByValueAndHash) {
  EXPECT_LT(PolicyVersion{3}, PolicyVersion{4});
  EXPECT_EQ(RequestId{"a"}, RequestId{"a"});
  EXPECT_EQ(std::hash<RequestId>{}(RequestId{"a"}), std::hash<std::string>{}("a"));
  static_assert(!std::is_convertible_v<RequestId, WorkerId>);
}

}  // namespace
}  // namespace cuda_agent
