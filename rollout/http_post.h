// One HTTP POST with a JSON body (or a GET) through libcurl, bounded by a connect timeout and a
// total deadline. Used by the OpenAI-compatible policy backend; no retries here (the caller decides
// what is worth retrying, see rollout/openai_policy.cpp).
//
//   Expected<HttpResponse> r = http_post_json("http://127.0.0.1:8000/v1/chat/completions", body,
//                                             {"Authorization: Bearer ..."}, {.total_ms = 60000});
//
// An Error means no complete HTTP response arrived (connection refused, timeout, reset, a reply
// that is not HTTP); its code says which: "http.connect", "http.timeout", "http.transport".
// Any status that did arrive, 500 included, is an HttpResponse.
//
// Threading: safe from any number of threads (one curl handle per call).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

struct HttpTimeouts {
  std::int64_t connect_ms = 10'000;
  std::int64_t total_ms = 600'000;  ///< whole request: connect, send, wait, receive
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::int64_t retry_after_ms = -1;  ///< from a Retry-After header (seconds), -1 when absent
};

Expected<HttpResponse> http_post_json(const std::string& url, const std::string& body,
                                      const std::vector<std::string>& headers,
                                      const HttpTimeouts& timeouts);

/// One HTTP GET (e.g. a server's /health), with the same errors as http_post_json.
Expected<HttpResponse> http_get(const std::string& url, const std::vector<std::string>& headers,
                                const HttpTimeouts& timeouts);

}  // namespace cuda_agent
