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
// Threading: pure functions.
#pragma once

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

}  // namespace cuda_agent
