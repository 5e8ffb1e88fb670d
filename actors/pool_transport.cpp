#include "actors/pool_transport.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <utility>

namespace cuda_agent {
namespace {

Error bad_key(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "pool.curve_key", what);
}

bool valid_z85_key(const std::string& key) {
  std::uint8_t raw[32];
  return key.size() == 40 && zmq_z85_decode(raw, key.c_str()) != nullptr;
}

}  // namespace

Status apply_curve_client(zmq::socket_t& socket, const CurveClientKeys& keys) {
  if (!valid_z85_key(keys.server_public_z85)) return bad_key("server public key is not Z85");
  if (!valid_z85_key(keys.client.public_z85) || !valid_z85_key(keys.client.secret_z85)) {
    return bad_key("client key pair is not two Z85 keys");
  }
  try {
    socket.set(zmq::sockopt::curve_serverkey, keys.server_public_z85);
    socket.set(zmq::sockopt::curve_publickey, keys.client.public_z85);
    socket.set(zmq::sockopt::curve_secretkey, keys.client.secret_z85);
  } catch (const zmq::error_t& e) {
    return zmq_failure("setting CURVE client keys", e);
  }
  return Status::ok();
}

Status apply_curve_server(zmq::socket_t& socket, const CurveServerKeys& keys,
                          const std::string& zap_domain) {
  if (!valid_z85_key(keys.server.public_z85) || !valid_z85_key(keys.server.secret_z85)) {
    return bad_key("server key pair is not two Z85 keys");
  }
  try {
    socket.set(zmq::sockopt::curve_server, true);
    socket.set(zmq::sockopt::curve_secretkey, keys.server.secret_z85);
    socket.set(zmq::sockopt::zap_domain, zap_domain);
  } catch (const zmq::error_t& e) {
    return zmq_failure("setting CURVE server keys", e);
  }
  return Status::ok();
}

namespace {

constexpr int kMonitoredEvents =
    ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", value);
  return text;
}

// What a ZMQ_PROTOCOL_ERROR_* means for the operator; `security` is set for the codes that come
// from the security mechanism (keys, ZAP) rather than from framing.
std::string protocol_problem(std::uint32_t code, bool& security) {
  security = true;
  switch (code) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return "security mechanism mismatch (one side uses CURVE, the other does not)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
    case ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE:
      return "the CURVE handshake failed (" + hex(code) + "): wrong keys";
    default: break;
  }
  if (code >= ZMQ_PROTOCOL_ERROR_ZAP_UNSPECIFIED && code < ZMQ_PROTOCOL_ERROR_WS_UNSPECIFIED) {
    return "the broker's authentication handler failed (" + hex(code) + ")";
  }
  security = false;
  return "ZeroMQ protocol error " + hex(code) + " during the handshake";
}

}  // namespace

Status ConnectionMonitor::start(zmq::context_t& context, zmq::socket_t& socket,
                                std::string endpoint, bool curve) {
  static std::atomic<std::uint64_t> counter{0};
  endpoint_ = std::move(endpoint);
  curve_ = curve;
  connected_ = false;
  silent_failures_ = 0;
  refusal_ = Error{};
  const std::string name = "inproc://pool-monitor-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter.fetch_add(1));
  try {
    if (zmq_socket_monitor(socket.handle(), name.c_str(), kMonitoredEvents) != 0) {
      throw zmq::error_t();
    }
    pair_.emplace(context, zmq::socket_type::pair);
    pair_->set(zmq::sockopt::linger, 0);
    pair_->set(zmq::sockopt::rcvhwm, 0);  // state changes only: never drop one
    pair_->connect(name);
  } catch (const zmq::error_t& e) {
    pair_.reset();
    return zmq_failure("monitoring the broker connection", e);
  }
  return Status::ok();
}

void ConnectionMonitor::stop(zmq::socket_t& socket) {
  if (!pair_) return;
  (void)zmq_socket_monitor(socket.handle(), nullptr, 0);
  close();
}

void ConnectionMonitor::close() {
  pair_.reset();
  connected_ = false;
}

int ConnectionMonitor::fd() { return pair_ ? static_cast<int>(pair_->get(zmq::sockopt::fd)) : -1; }

ConnectionMonitor::Change ConnectionMonitor::next() {
  while (pair_) {
    zmq::message_t event, address;
    if (!pair_->recv(event, zmq::recv_flags::dontwait)) return Change::kNone;
    if (event.more()) (void)pair_->recv(address);  // the second frame is already here
    if (event.size() < 6) continue;
    std::uint16_t kind = 0;
    std::uint32_t value = 0;
    std::memcpy(&kind, event.data(), sizeof kind);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof value);
    std::string problem;
    bool security = true;
    switch (kind) {
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        connected_ = true;
        silent_failures_ = 0;
        refusal_ = Error{};
        return Change::kUp;
      case ZMQ_EVENT_DISCONNECTED:
        if (!connected_) continue;  // the end of a failed handshake, reported already
        connected_ = false;
        return Change::kDown;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        problem = "the broker refused this process's key (ZAP status " + std::to_string(value) +
                  "; is its public key on the broker's allow-list?)";
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: problem = protocol_problem(value, security); break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        // What a broker does with a CURVE hello it cannot open (a wrong server public key) or,
        // depending on who speaks first, with a client that has no keys at all.
        if (++silent_failures_ < 2) continue;
        problem = "the broker closed the connection during the handshake, twice in a row (errno " +
                  std::to_string(value) + "): " +
                  (curve_ ? "is the server public key the broker's?"
                          : "this process has no CURVE keys; does the broker require them "
                            "([security] in the manifest)?");
        break;
      default: continue;
    }
    refusal_ = security ? make_error(ErrorCategory::kUnavailable, "pool.auth_failed",
                                     "authentication failed for " + endpoint_ + ": " + problem)
                        : make_error(ErrorCategory::kUnavailable, "pool.handshake_failed",
                                     "handshake with " + endpoint_ + " failed: " + problem);
    return Change::kRefused;
  }
  return Change::kNone;
}

WakeFd::WakeFd() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

WakeFd::~WakeFd() {
  if (fd_ >= 0) ::close(fd_);
}

void WakeFd::notify() const {
  const std::uint64_t one = 1;
  (void)!::write(fd_, &one, sizeof one);
}

void WakeFd::drain() const {
  std::uint64_t count = 0;
  (void)!::read(fd_, &count, sizeof count);
}

Error zmq_failure(std::string_view what, const zmq::error_t& e) {
  return make_error(
      ErrorCategory::kIo, "pool.zmq",
      std::string(what) + ": " + e.what() + " (errno " + std::to_string(e.num()) + ")");
}

bool recv_multipart(zmq::socket_t& socket, std::vector<zmq::message_t>& parts,
                    std::size_t max_parts, std::size_t& dropped_parts) {
  parts.clear();
  dropped_parts = 0;
  zmq::message_t part;
  if (!socket.recv(part, zmq::recv_flags::dontwait)) return false;
  bool more = part.more();
  parts.push_back(std::move(part));
  while (more) {
    zmq::message_t next;
    (void)socket.recv(next);  // the rest of a multipart message is already here
    more = next.more();
    if (parts.size() < max_parts) {
      parts.push_back(std::move(next));
    } else {
      ++dropped_parts;
    }
  }
  return true;
}

std::string describe_peer(const zmq::message_t& routing_id, zmq::message_t& frame) {
  std::string out;
  // zmq_msg_gets fails (NULL) where the transport has no such property; cppzmq would throw.
  if (const char* addr = zmq_msg_gets(frame.handle(), "Peer-Address")) {
    out += "addr=";
    out += addr;
  }
  if (const char* user = zmq_msg_gets(frame.handle(), "User-Id")) {
    if (*user) {
      out += out.empty() ? "key=" : " key=";
      out += user;
    }
  }
  out += out.empty() ? "id=" : " id=";
  const auto* bytes = static_cast<const unsigned char*>(routing_id.data());
  for (std::size_t i = 0; i < routing_id.size() && i < 32; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    out += hex;
  }
  return out;
}

zmq::message_t take_frame(std::string&& bytes) {
  // Up to 4 KiB a copy is cheaper: ZeroMQ's I/O thread later frees one block, instead of three
  // (the string's buffer, the string, ZeroMQ's content header), each freed on another core than
  // the one that wrote it. Measured on the GPU node (docs/BENCHMARKS.md, `take_frame`).
  if (bytes.size() <= kCopyFrameBytes) return zmq::message_t(bytes.data(), bytes.size());
  auto* owned = new std::string(std::move(bytes));
  return zmq::message_t(
      owned->data(), owned->size(),
      [](void*, void* hint) { delete static_cast<std::string*>(hint); }, owned);
}

zmq::message_t share_frame(zmq::message_t& m) {
  zmq::message_t out;
  out.copy(m);
  return out;
}

namespace {

// One frame holding the envelope with the payload after it, written once.
zmq::message_t joined_frame(std::string_view envelope, std::string_view payload) {
  zmq::message_t frame(envelope.size() + payload.size());
  auto* out = static_cast<char*>(frame.data());
  std::memcpy(out, envelope.data(), envelope.size());
  if (!payload.empty()) std::memcpy(out + envelope.size(), payload.data(), payload.size());
  return frame;
}

}  // namespace

PoolFrames pool_frames(std::string envelope, std::string&& payload) {
  if (payload.size() <= kPoolInlinePayloadBytes) {
    return PoolFrames{joined_frame(envelope, payload), std::nullopt};
  }
  return PoolFrames{take_frame(std::move(envelope)), take_frame(std::move(payload))};
}

PoolFrames pool_frames(std::string envelope, zmq::message_t* payload) {
  if (payload && payload->size() <= kPoolInlinePayloadBytes) {
    return PoolFrames{joined_frame(envelope, view(*payload)), std::nullopt};
  }
  PoolFrames out{take_frame(std::move(envelope)), std::nullopt};
  if (payload) out.payload = share_frame(*payload);
  return out;
}

PoolFrames pool_frames(std::string envelope, PoolBytes&& payload) {
  if (zmq::message_t* frame = payload.frame()) return pool_frames(std::move(envelope), frame);
  return pool_frames(std::move(envelope), std::move(payload).take());
}

bool send_frames(zmq::socket_t& socket, PoolFrames& frames, zmq::send_flags flags) {
  const auto more = frames.payload ? zmq::send_flags::sndmore : zmq::send_flags::none;
  if (!socket.send(frames.envelope, flags | more)) return false;
  return !frames.payload || static_cast<bool>(socket.send(*frames.payload, flags));
}

std::optional<std::string_view> payload_of(const std::vector<zmq::message_t>& parts,
                                           std::size_t first, std::size_t dropped,
                                           const PoolFrame& frame) {
  const bool wanted = has_payload_frame(frame.message);
  const std::uint64_t bytes = payload_frame_bytes(frame.message);
  if (dropped != 0) return std::nullopt;
  if (parts.size() == first + 1) {  // inline (or no payload)
    if (wanted && frame.trailing.size() != bytes) return std::nullopt;
    return frame.trailing;
  }
  if (parts.size() != first + 2 || !wanted || !frame.trailing.empty() ||
      parts[first + 1].size() != bytes) {
    return std::nullopt;
  }
  return view(parts[first + 1]);
}

bool take_payload(std::vector<zmq::message_t>& parts, std::size_t first, std::size_t dropped,
                  const PoolFrame& frame, zmq::message_t& payload) {
  const auto bytes = payload_of(parts, first, dropped, frame);
  if (!bytes) return false;
  if (parts.size() == first + 2) {
    payload = std::move(parts[first + 1]);
  } else if (!bytes->empty()) {
    payload = zmq::message_t(bytes->data(), bytes->size());
  }
  return true;
}

std::optional<PoolBytes> take_payload_bytes(std::vector<zmq::message_t>& parts, std::size_t first,
                                            std::size_t dropped, const PoolFrame& frame) {
  const auto bytes = payload_of(parts, first, dropped, frame);
  if (!bytes) return std::nullopt;
  if (parts.size() == first + 2) return PoolBytes(std::move(parts[first + 1]));
  return PoolBytes(std::string(*bytes));
}

std::optional<std::uint64_t> LogLimiter::allow(SteadyTime now) {
  if (now - window_start_ >= std::chrono::seconds(1)) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= per_second_) {
    ++suppressed_;
    return std::nullopt;
  }
  ++in_window_;
  return std::exchange(suppressed_, 0);
}

void name_this_thread(const char* name) {
  char shown[16];
  std::snprintf(shown, sizeof shown, "%s", name);
  (void)pthread_setname_np(pthread_self(), shown);
}

}  // namespace cuda_agent
