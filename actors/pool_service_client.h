// The client of one service on a work pool (the compile farm, the GPU bench): a PoolClient that
// sends the service's typed request and returns its typed result, so a caller links the wire and
// the codecs, never the service. The service is named by a protocol struct:
//
//   struct CompilePoolProtocol {
//     using Request = CompileRequest;   // has `RequestHeader header`
//     using Result = CompileResult;
//     static constexpr std::int64_t kDefaultTimeoutMs = 300'000;
//     static std::string encode(const Request&);
//     static Expected<Result> decode(std::string_view reply);  // the reply's error, if it holds
//     one
//   };
//   using CompileClient = PoolServiceClient<CompilePoolProtocol>;
//
//   ASSIGN_OR_RETURN(auto client, CompileClient::connect({.broker_endpoint = ep}));
//   Expected<CompileResult> r = client->call(request);
//
// A request without a deadline gets now + the protocol's default (or the caller's). A transport
// problem (deadline, busy, lost workers, broker away) is the pool's error; a request the service
// could not serve is the service's error; both come back as the Error of the result.
//
// Threading: call() may be called from any thread concurrently (as PoolClient::call).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/pool_client.h"
#include "core/clock.h"

namespace cuda_agent {

template <class Protocol>
class PoolServiceClient {
 public:
  using Request = typename Protocol::Request;
  using Result = typename Protocol::Result;

  static Expected<std::unique_ptr<PoolServiceClient>> connect(const PoolClientOptions& options) {
    ASSIGN_OR_RETURN(auto client, PoolClient::connect(options));
    return std::unique_ptr<PoolServiceClient>(new PoolServiceClient(std::move(client)));
  }

  /// Sends the request to a worker having every tag and waits until its deadline.
  Expected<Result> call(Request request, std::vector<std::string> tags = {},
                        std::int64_t default_timeout_ms = Protocol::kDefaultTimeoutMs) {
    if (request.header.deadline_unix_ms <= 0)
      request.header.deadline_unix_ms = now_unix_ms() + default_timeout_ms;
    PoolRequest pool_request{request.header, std::move(tags), Protocol::encode(request)};
    ASSIGN_OR_RETURN(std::string reply, client_->call(std::move(pool_request)));
    return Protocol::decode(reply);
  }

  PoolClient& pool() { return *client_; }

 private:
  explicit PoolServiceClient(std::unique_ptr<PoolClient> client) : client_(std::move(client)) {}
  std::unique_ptr<PoolClient> client_;
};

}  // namespace cuda_agent
