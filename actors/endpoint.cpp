#include "actors/endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <strings.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace cuda_agent {
namespace {

bool all_of(std::string_view s, bool (*ok)(char)) {
  for (char c : s)
    if (!ok(c)) return false;
  return !s.empty();
}
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}
bool ipv6_char(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
}

std::string tcp_problem(std::string_view rest, EndpointUse use) {
  const bool bind = use == EndpointUse::kBind;
  if (rest.find(';') != std::string_view::npos)
    return "the source-address form (SRC;DST) is not supported";
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return "no port: write tcp://HOST:PORT";
  const std::string_view host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (host.empty()) return "no host before ':" + std::string(port) + "'";
  if (host == "*") {
    if (!bind) return "'*' is a host to bind to, not one to connect to";
  } else if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']' ||
        !all_of(host.substr(1, host.size() - 2), ipv6_char))
      return "host '" + std::string(host) + "' is not an [IPv6] address";
  } else if (!all_of(host, host_char)) {
    return "host '" + std::string(host) + "' is not a host name or address";
  }
  if (port == "*") {
    if (!bind) return "port '*' binds an ephemeral port; connecting needs a number";
    return "";
  }
  if (!all_of(port, digit) || port.size() > 5 || std::stoi(std::string(port)) > 65535)
    return "port '" + std::string(port) + "' is not a number from 0 to 65535";
  if (!bind && std::stoi(std::string(port)) == 0) return "port 0 cannot be connected to";
  return "";
}

// One getaddrinfo call, shared by the thread that makes it and the caller that waits for it (the
// caller may give up first).
struct Lookup {
  std::mutex mutex;
  std::condition_variable answered;
  bool done = false;
  std::string failure;  // empty: the host resolved
};

// An address ZeroMQ uses as it is, or a name that never goes to the resolver.
bool needs_no_lookup(const std::string& host) {
  unsigned char address[sizeof(in6_addr)];
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return ::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), address) == 1;
  }
  return ::inet_pton(AF_INET, host.c_str(), address) == 1 ||
         ::strcasecmp(host.c_str(), "localhost") == 0 || host == "*";
}

}  // namespace

std::string endpoint_problem(std::string_view endpoint, EndpointUse use) {
  const std::string quoted = "endpoint '" + std::string(endpoint) + "': ";
  const std::size_t scheme_end = endpoint.find("://");
  if (scheme_end == std::string_view::npos)
    return quoted + "no transport: write tcp://" + std::string(endpoint) +
           " (or ipc://PATH, inproc://NAME)";
  const std::string_view scheme = endpoint.substr(0, scheme_end);
  const std::string_view rest = endpoint.substr(scheme_end + 3);
  std::string problem;
  if (scheme == "tcp") {
    problem = tcp_problem(rest, use);
  } else if (scheme == "ipc" || scheme == "inproc") {
    if (rest.empty())
      problem = "no " + std::string(scheme == "ipc" ? "path" : "name") + " after " +
                std::string(scheme) + "://";
  } else {
    problem = "transport '" + std::string(scheme) + "' is not one of tcp, ipc, inproc";
  }
  return problem.empty() ? "" : quoted + problem;
}

Status validate_endpoint(std::string_view endpoint, EndpointUse use) {
  std::string problem = endpoint_problem(endpoint, use);
  if (problem.empty()) return Status();
  return make_error(ErrorCategory::kInvalidInput, "endpoint.invalid", std::move(problem));
}

Status resolve_endpoint_host(std::string_view endpoint, std::chrono::milliseconds timeout) {
  constexpr std::string_view kTcp = "tcp://";
  if (endpoint.substr(0, kTcp.size()) != kTcp) return Status();
  const std::string_view rest = endpoint.substr(kTcp.size());
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Status();
  const std::string host(rest.substr(0, colon));
  if (needs_no_lookup(host)) return Status();

  auto lookup = std::make_shared<Lookup>();
  std::thread([lookup, host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
    std::string failure;
    if (rc == EAI_SYSTEM) {
      failure = std::strerror(errno);
    } else if (rc != 0) {
      failure = ::gai_strerror(rc);
    }
    if (found) ::freeaddrinfo(found);
    std::lock_guard lock(lookup->mutex);
    lookup->done = true;
    lookup->failure = std::move(failure);
    lookup->answered.notify_all();
  }).detach();

  std::unique_lock lock(lookup->mutex);
  const bool answered = lookup->answered.wait_for(lock, timeout, [&] { return lookup->done; });
  if (answered && lookup->failure.empty()) return Status();
  return make_error(ErrorCategory::kUnavailable, "pool.host_unresolvable",
                    "cannot resolve host " + host + " in " + std::string(endpoint) + ": " +
                        (answered ? lookup->failure
                                  : "the resolver gave no answer within " +
                                        std::to_string(timeout.count()) + " ms"));
}

}  // namespace cuda_agent
