#include "core/log.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(Log, TextLinesCarryContextAndQuoteWhereNeeded) {
  LogContext ctx{.run = "r1", .role = "bench", .worker = ""};
  EXPECT_EQ(format_log_fields("text", ctx, "request done", {{"request", "r-9"}, {"ms", "12"}}),
            "run=r1 role=bench msg=\"request done\" request=r-9 ms=12");
  EXPECT_EQ(format_log_fields("text", {}, "x", {{"path", "a b\"c"}}), "msg=x path=\"a b\\\"c\"");
}

TEST(Log, JsonLinesAreEscapedFields) {
  LogContext ctx{.run = "r1", .role = "", .worker = "w\n0"};
  EXPECT_EQ(format_log_fields("json", ctx, "hi", {{"k", "v\"1"}}),
            R"("run":"r1","worker":"w\n0","msg":"hi","k":"v\"1")");
}

TEST(Log, SetupRejectsUnknownLevelAndFormat) {
  EXPECT_EQ(setup_logging({.level = "loud"}).error().code, "log.bad_level");
  EXPECT_EQ(setup_logging({.format = "xml"}).error().code, "log.bad_format");
  EXPECT_TRUE(setup_logging({.level = "warn", .format = "json"}));
  EXPECT_TRUE(setup_logging({}));  // twice is fine
  log_info("logging works", {{"k", "v"}});
}

}  // namespace
}  // namespace cuda_agent
