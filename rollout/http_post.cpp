#include "rollout/http_post.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace cuda_agent {
namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Keeps the Retry-After header (delay-seconds form; an HTTP date is ignored).
std::size_t read_header(char* data, std::size_t size, std::size_t n, void* out) {
  std::string line(data, size * n);
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  constexpr std::string_view kName = "retry-after:";
  if (lower.rfind(kName, 0) == 0) {
    try {
      const double seconds = std::stod(line.substr(kName.size()));
      if (seconds >= 0) *static_cast<std::int64_t*>(out) = static_cast<std::int64_t>(seconds * 1e3);
    } catch (...) {
      // not the delay-seconds form
    }
  }
  return size * n;
}

// One request: a POST of `body` when `post`, else a GET.
Expected<HttpResponse> perform(bool post, const std::string& url, const std::string& body,
                               const std::vector<std::string>& headers,
                               const HttpTimeouts& timeouts) {
  init_curl_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return make_error(ErrorCategory::kInternal, "http.init", "curl_easy_init failed");
  curl_slist* list = post ? curl_slist_append(nullptr, "Content-Type: application/json") : nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(list, curl_slist_free_all);

  HttpResponse response;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  if (post) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeouts.connect_ms));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<std::int64_t>(1, timeouts.total_ms)));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based DNS timeouts
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &response.retry_after_ms);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  char error_text[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);

  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    const std::string what = std::string(post ? "POST " : "GET ") + url + ": " +
                             (error_text[0] ? error_text : curl_easy_strerror(rc));
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        return make_error(ErrorCategory::kTimeout, "http.timeout", what);
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
        return make_error(ErrorCategory::kUnavailable, "http.connect", what);
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        return make_error(ErrorCategory::kInvalidInput, "http.url", what);
      default: return make_error(ErrorCategory::kUnavailable, "http.transport", what);
    }
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace

Expected<HttpResponse> http_post_json(const std::string& url, const std::string& body,
                                      const std::vector<std::string>& headers,
                                      const HttpTimeouts& timeouts) {
  return perform(true, url, body, headers, timeouts);
}

Expected<HttpResponse> http_get(const std::string& url, const std::vector<std::string>& headers,
                                const HttpTimeouts& timeouts) {
  return perform(false, url, {}, headers, timeouts);
}

}  // namespace cuda_agent
