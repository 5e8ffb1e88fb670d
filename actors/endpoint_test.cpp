// Issue 27 item 8: an endpoint typo silently listened on another port; a missing transport got
// only "Invalid argument" from ZeroMQ. Each bad endpoint is named with its bad part.
#include "actors/endpoint.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

std::string bind_problem(const char* e) { return endpoint_problem(e, EndpointUse::kBind); }
std::string connect_problem(const char* e) { return endpoint_problem(e, EndpointUse::kConnect); }

TEST(Endpoint, TheIssuesTyposNameTheBadPart) {
  std::string p = bind_problem("tcp://127.0.0.1:1755x1");
  EXPECT_NE(p.find("tcp://127.0.0.1:1755x1"), std::string::npos) << p;
  EXPECT_NE(p.find("port '1755x1'"), std::string::npos) << p;
  p = connect_problem("localhost:17552");
  EXPECT_NE(p.find("no transport"), std::string::npos) << p;
  EXPECT_NE(p.find("tcp://localhost:17552"), std::string::npos) << p;  // the suggestion
  Status s = validate_endpoint("localhost:17552", EndpointUse::kConnect);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "endpoint.invalid");
  EXPECT_EQ(s.error().category, ErrorCategory::kInvalidInput);
}

TEST(Endpoint, GoodEndpointsPass) {
  for (const char* e : {"tcp://127.0.0.1:5551", "tcp://*:5551", "tcp://*:*", "tcp://127.0.0.1:0",
                        "tcp://farm-01.cluster:5552", "tcp://[::1]:5551", "ipc:///tmp/x.sock",
                        "inproc://farm", "tcp://eth0:5551"})
    EXPECT_EQ(bind_problem(e), "") << e;
  for (const char* e : {"tcp://127.0.0.1:5551", "tcp://farm:5552", "tcp://[fe80::1]:65535",
                        "ipc:///tmp/x.sock", "inproc://farm"})
    EXPECT_EQ(connect_problem(e), "") << e;
}

TEST(Endpoint, BadEndpointsAreRefused) {
  for (const char* e : {"tcp://127.0.0.1", "tcp://:5551", "tcp://127.0.0.1:65536",
                        "tcp://127.0.0.1:", "tcp://127.0.0.1:-1", "tcp://ho st:5551",
                        "tcp://[::1:5551", "udp://127.0.0.1:5551", "ipc://", "inproc://",
                        "tcp://a;b:5551", "", "tcp://127.0.0.1:99999999999999999999"})
    EXPECT_NE(bind_problem(e), "") << e;
  EXPECT_NE(connect_problem("tcp://*:5551"), "");
  EXPECT_NE(connect_problem("tcp://127.0.0.1:*"), "");
  EXPECT_NE(connect_problem("tcp://127.0.0.1:0"), "");
}

}  // namespace
}  // namespace cuda_agent
