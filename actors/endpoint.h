// ZeroMQ endpoints as a person types them, checked before a socket sees them: ZeroMQ reads
// "tcp://127.0.0.1:1755x1" as port 1755 and says only "Invalid argument" for "localhost:17552".
//
//   if (std::string bad = endpoint_problem("tcp://h:1755x1", EndpointUse::kConnect); !bad.empty())
//     -> "endpoint 'tcp://h:1755x1': port '1755x1' is not a number from 0 to 65535"
//
// Accepted (the transports this project uses):
//   tcp://HOST:PORT     HOST a name, an IPv4 address, [IPv6] or (to bind) * ; PORT 0-65535, or
//                       * to bind to an ephemeral port (0 binds one too); connecting needs a
//                       named host and a port from 1
//   ipc://PATH          a non-empty path (ipc://* binds a fresh one)
//   inproc://NAME       a non-empty name
//
// A well-formed endpoint may still name a host that does not exist: ZeroMQ resolves it in the
// background on every reconnect attempt and says nothing, so a client would wait out its whole
// reconnect timeout. resolve_endpoint_host() asks the resolver once, at connect time:
//
//   RETURN_IF_ERROR(resolve_endpoint_host("tcp://no-such-host.invalid:5551", 5000ms));
//     -> "cannot resolve host no-such-host.invalid in tcp://no-such-host.invalid:5551: ..."
//
// Threading: pure functions; resolve_endpoint_host may be called from any thread (its lookup runs
// on a thread of its own, which outlives a call that gave up waiting, until the resolver answers).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/error.h"

namespace cuda_agent {

enum class EndpointUse {
  kBind,     ///< a broker listens on it
  kConnect,  ///< a client or worker connects to it
};

/// "" when `endpoint` is well formed for `use`; else a sentence naming the endpoint and the bad
/// part. Fits CLI11's `->check(...)` directly.
std::string endpoint_problem(std::string_view endpoint, EndpointUse use);

/// The same as a Status: invalid_input, code endpoint.invalid.
Status validate_endpoint(std::string_view endpoint, EndpointUse use);

/// Checks that the host of a tcp:// endpoint to connect to resolves (getaddrinfo, any address
/// family), waiting at most `timeout` for the resolver. No lookup is made, so none can fail or
/// wait, for an IP address (IPv4, or [IPv6] in brackets), for "localhost", for ipc:// and
/// inproc:// endpoints, or for an endpoint that is not of the form tcp://HOST:PORT (malformed ones
/// are endpoint_problem's to name). Fails with unavailable, code pool.host_unresolvable: "cannot
/// resolve host HOST in ENDPOINT: <the resolver's reason, or that it gave no answer in time>".
Status resolve_endpoint_host(std::string_view endpoint, std::chrono::milliseconds timeout);

}  // namespace cuda_agent
