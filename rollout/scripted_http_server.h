// Test-only: an HTTP/1.1 server on 127.0.0.1 that answers each request with the next scripted
// reply (status, body, headers, a delay, or a dropped connection) and records what it was sent.
// Stands in for an OpenAI-compatible endpoint in rollout/openai_policy_test.cpp.
//
// Threading: one accept thread serves connections one at a time; the accessors lock.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cuda_agent::testing {

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::vector<std::string> headers;  ///< extra "Name: value" lines
  int delay_ms = 0;                  ///< wait before answering (a slow server)
  bool drop = false;                 ///< close the connection without answering
};

struct ReceivedRequest {
  std::string head;  ///< request line and headers
  std::string body;
};

class ScriptedHttpServer {
 public:
  explicit ScriptedHttpServer(std::vector<ScriptedReply> script)
      : script_(script.begin(), script.end()) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<ReceivedRequest> received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      handle(c);
      ::close(c);
    }
  }

  // Reads until the headers and Content-Length bytes of body are in, or 5 s pass.
  static bool read_request(int c, ReceivedRequest& r) {
    std::string data;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::size_t header_end = std::string::npos, want = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[8192];
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) return false;
      data.append(buf, static_cast<std::size_t>(n));
      if (header_end == std::string::npos) {
        header_end = data.find("\r\n\r\n");
        if (header_end == std::string::npos) continue;
        r.head = data.substr(0, header_end);
        std::string lower = r.head;
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        const auto cl = lower.find("content-length:");
        if (cl != std::string::npos) want = std::stoul(lower.substr(cl + 15));
      }
      if (data.size() >= header_end + 4 + want) {
        r.body = data.substr(header_end + 4, want);
        return true;
      }
    }
    return false;
  }

  void handle(int c) {
    ReceivedRequest r;
    if (!read_request(c, r)) return;
    ScriptedReply reply{.status = 500, .body = R"({"error":{"message":"script exhausted"}})"};
    {
      std::lock_guard lock(mu_);
      received_.push_back(r);
      if (!script_.empty()) {
        reply = script_.front();
        script_.pop_front();
      }
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(reply.delay_ms);
    while (!stop_ && std::chrono::steady_clock::now() < until) {
      pollfd none{-1, 0, 0};
      ::poll(&none, 0, 5);  // the scripted delay of a slow server, cut short at shutdown
    }
    if (reply.drop) return;
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) +
                      " Scripted\r\nContent-Type: application/json\r\nConnection: close\r\n"
                      "Content-Length: " +
                      std::to_string(reply.body.size()) + "\r\n";
    for (const auto& h : reply.headers) out += h + "\r\n";
    out += "\r\n" + reply.body;
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = ::send(c, p, left, MSG_NOSIGNAL);
      if (n <= 0) return;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::deque<ScriptedReply> script_;
  std::vector<ReceivedRequest> received_;
  std::thread thread_;
};

}  // namespace cuda_agent::testing
