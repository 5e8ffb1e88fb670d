// Issue 27 item 8: an endpoint typo silently listened on another port; a missing transport got
// only "Invalid argument" from ZeroMQ. Each bad endpoint is named with its bad part.
// Issue 27 item 3: a host that does not resolve is its own error, found at connect time.
#include "actors/endpoint.h"

#include <gtest/gtest.h>

#include <chrono>

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

// Covers: the endpoints that need no resolver (addresses, localhost, ipc, inproc) pass with no
// time at all for a lookup, so none was made.
TEST(Endpoint, AddressesAndLocalhostNeedNoLookup) {
  for (const char* e :
       {"tcp://127.0.0.1:5551", "tcp://10.1.2.3:1", "tcp://[::1]:5551", "tcp://[fe80::1]:65535",
        "tcp://localhost:5551", "tcp://LOCALHOST:5551", "ipc:///tmp/x.sock", "inproc://farm"}) {
    Status s = resolve_endpoint_host(e, std::chrono::milliseconds(0));
    EXPECT_TRUE(s) << e << ": " << s.error().to_string();
  }
}

// Covers: a name the resolver does not know (RFC 6761 keeps .invalid from ever resolving) fails
// with its own code, naming the host and the endpoint, well before a client's reconnect timeout.
TEST(Endpoint, AHostThatDoesNotResolveIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  Status s =
      resolve_endpoint_host("tcp://no-such-host.invalid:17552", std::chrono::milliseconds(5000));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "pool.host_unresolvable");
  EXPECT_EQ(s.error().category, ErrorCategory::kUnavailable);
  EXPECT_NE(s.error().message.find(
                "cannot resolve host no-such-host.invalid in tcp://no-such-host.invalid:17552"),
            std::string::npos)
      << s.error().message;
  EXPECT_LT(took, std::chrono::milliseconds(5500));
}

}  // namespace
}  // namespace cuda_agent
