// What the work-pool broker, worker and client share about their ZeroMQ sockets: CURVE settings,
// the connection monitor of a connecting socket, multipart receive, peer names for logs,
// zero-copy payload frames, clocks and a log limiter.
// Internal to actors/ (the pool's public headers are work_pool_broker.h, pool_worker.h,
// pool_client.h and pool_gateway.h).
//
// Threading: the free functions are stateless and safe from any thread, but a zmq::socket_t they
// are given must only be used by its owning thread. LogLimiter is owned by one thread.
#pragma once

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actors/curve_keys.h"
#include "core/clock.h"
#include "core/error.h"
#include "messages/pool_codec.h"

namespace cuda_agent {

/// Hashes string keys (request ids, routing ids) on every lookup. With std::hash<std::string>,
/// libstdc++ instead compares the key with every entry, one memcmp each, while a table holds 20
/// or fewer, which is the size of the pool's in-flight tables; a hasher of its own turns that off.
struct StringKeyHash {
  std::size_t operator()(std::string_view key) const noexcept {
    return std::hash<std::string_view>{}(key);
  }
};
template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringKeyHash>;
using StringSet = std::unordered_set<std::string, StringKeyHash>;

/// CURVE keys of a connecting socket (pool client or worker). Both key pairs are Z85 text as
/// read_curve_key_file (actors/curve_keys.h) returns them.
struct CurveClientKeys {
  /// The broker's public key; the connection fails unless the broker holds its secret half.
  std::string server_public_z85;
  /// This process's own key pair; its public half must be on the broker's allow-list.
  CurveKeyPair client;
};

/// CURVE keys of the listening side (broker).
struct CurveServerKeys {
  /// The broker's key pair (public and secret).
  CurveKeyPair server;
  /// Client public keys (Z85) allowed to connect, to either socket. Must not be empty.
  std::vector<std::string> allowed_client_public_z85;
};

/// Sets CURVE client options on `socket` (before connect).
Status apply_curve_client(zmq::socket_t& socket, const CurveClientKeys& keys);
/// Sets CURVE server options on `socket` (before bind); `zap_domain` names it in ZAP requests.
Status apply_curve_server(zmq::socket_t& socket, const CurveServerKeys& keys,
                          const std::string& zap_domain);

/// The one connection of a connecting socket (pool client or worker) as ZeroMQ's socket monitor
/// reports it: whether a broker is connected now (handshake done), and whether the broker refused
/// the handshake. A refused CURVE handshake is the failure ZeroMQ hides otherwise: the socket
/// stays silent and, after a ZAP refusal or a mechanism mismatch, never tries again. Monitored
/// events are state changes only (no reconnect attempts), so an idle socket's monitor queue stays
/// small however long its broker is away.
///
/// Refusals: ZMQ_EVENT_HANDSHAKE_FAILED_AUTH (the broker's ZAP handler said no) and
/// ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL (mechanism mismatch, a CURVE box that does not open, ...)
/// at once; ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL (the broker closed the connection mid-handshake,
/// which is what a wrong server public key looks like) on the second in a row without a
/// connection in between, since a broker dying mid-handshake gives one too. The refusal is
/// "pool.auth_failed" ("authentication failed for ENDPOINT: ..."), or "pool.handshake_failed" for
/// a protocol error that has nothing to do with security (the endpoint is not a pool broker's);
/// category unavailable.
///
/// Threading: used by the thread that owns the socket (or holds its mutex), like the socket.
class ConnectionMonitor {
 public:
  enum class Change { kNone, kUp, kDown, kRefused };

  ConnectionMonitor() = default;
  ConnectionMonitor(const ConnectionMonitor&) = delete;
  ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;
  ~ConnectionMonitor() { close(); }

  /// Monitors `socket` (call before it connects); `endpoint` names the broker in errors and
  /// `curve` says whether the socket uses CURVE.
  Status start(zmq::context_t& context, zmq::socket_t& socket, std::string endpoint, bool curve);
  /// Stops monitoring `socket` and closes the monitor's socket. Idempotent.
  void stop(zmq::socket_t& socket);
  /// The monitor socket's ZMQ_FD, to poll beside the monitored socket's. Edge-triggered like it:
  /// read next() until kNone before polling again. -1 when not started.
  int fd();
  /// The monitor socket itself, for zmq::poll (level-triggered: no edge to lose); nullptr when
  /// not started.
  void* handle() { return pair_ ? pair_->handle() : nullptr; }
  /// Takes in the next event that changes something: kUp (handshake done: connected), kDown (a
  /// connection was lost), kRefused (see refusal()); kNone once nothing more waits.
  Change next();
  bool connected() const { return connected_; }
  /// Why the last handshake was refused (empty code: none since the last connection).
  const Error& refusal() const { return refusal_; }

 private:
  void close();

  std::optional<zmq::socket_t> pair_;
  std::string endpoint_;
  bool curve_ = false;
  bool connected_ = false;
  int silent_failures_ = 0;  // HANDSHAKE_FAILED_NO_DETAIL in a row
  Error refusal_;
};

/// An eventfd that wakes the thread owning a socket, which waits in zmq::poll on the socket and
/// on fd(): any thread notify()s (after queueing what it wants the owner to do), the owner
/// drain()s it after a wake. Closed on destruction.
///
/// Threading: notify() from any thread; drain() by the owner.
class WakeFd {
 public:
  WakeFd();
  ~WakeFd();
  WakeFd(const WakeFd&) = delete;
  WakeFd& operator=(const WakeFd&) = delete;
  /// False when the kernel gave no eventfd (the owner's start should fail, naming it).
  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void notify() const;
  void drain() const;

 private:
  int fd_ = -1;
};

/// Translates a zmq::error_t once, here: "pool.zmq" with the operation and zmq's text.
Error zmq_failure(std::string_view what, const zmq::error_t& e);

/// Receives one multipart message. Keeps at most `max_parts` frames (the rest are received and
/// counted in `dropped_parts`). Returns false when nothing was waiting (non-blocking).
bool recv_multipart(zmq::socket_t& socket, std::vector<zmq::message_t>& parts,
                    std::size_t max_parts, std::size_t& dropped_parts);

/// "addr=127.0.0.1 id=00800041a7 key=<z85>" for a message received from a peer: the TCP address
/// and CURVE user id where ZeroMQ knows them, and the ROUTER routing id in hex.
std::string describe_peer(const zmq::message_t& routing_id, zmq::message_t& frame);

/// A frame holding `bytes`: copied up to kCopyFrameBytes, owned without a copy above that.
zmq::message_t take_frame(std::string&& bytes);
inline constexpr std::size_t kCopyFrameBytes = 4096;
inline std::string_view view(const zmq::message_t& m) {
  return std::string_view(static_cast<const char*>(m.data()), m.size());
}
/// A frame sharing `m`'s content (reference-counted for large frames, no copy).
zmq::message_t share_frame(zmq::message_t& m);

/// Payload bytes in one of two homes: a std::string, or a received frame read in place. A worker
/// hands its handler a large received payload this way, and sends a handler's result that is
/// such a frame back out as it is, so a large payload crosses the worker without a copy (as raw
/// ZeroMQ's echo does). Made implicitly from a std::string. Holding a string costs no ZeroMQ
/// call (the frame is optional), so small payloads travel as strings.
class PoolBytes {
 public:
  PoolBytes() = default;
  PoolBytes(std::string bytes) : string_(std::move(bytes)) {}  // NOLINT: implicit by design
  explicit PoolBytes(zmq::message_t frame) : frame_(std::move(frame)) {}

  std::string_view view() const {
    return frame_ ? cuda_agent::view(*frame_) : std::string_view(string_);
  }
  operator std::string_view() const { return view(); }  // NOLINT: implicit by design
  std::size_t size() const { return view().size(); }
  bool empty() const { return size() == 0; }
  /// A copy of the bytes.
  std::string str() const { return std::string(view()); }
  /// The bytes as a string: moved out of a string, copied out of a frame.
  std::string take() && { return frame_ ? str() : std::move(string_); }
  /// The frame holding the bytes, or null when they are a string.
  zmq::message_t* frame() { return frame_ ? &*frame_ : nullptr; }

 private:
  std::string string_;
  std::optional<zmq::message_t> frame_;
};

/// A pool message's frames after any routing id: the envelope, with a payload of at most
/// kPoolInlinePayloadBytes appended to it (messages/pool_codec.h), and a larger payload's own
/// frame. The first form takes the payload by value; the second shares a received payload frame
/// (null: the message has none).
struct PoolFrames {
  zmq::message_t envelope;
  std::optional<zmq::message_t> payload;
};
PoolFrames pool_frames(std::string envelope, std::string&& payload);
PoolFrames pool_frames(std::string envelope, zmq::message_t* payload);
/// Either of the above, as `payload` holds its bytes.
PoolFrames pool_frames(std::string envelope, PoolBytes&& payload);
/// Sends `frames` as the rest of one message (a ROUTER sends the routing id first, with
/// sndmore); `flags` adds e.g. dontwait. False when ZeroMQ did not take them all.
bool send_frames(zmq::socket_t& socket, PoolFrames& frames,
                 zmq::send_flags flags = zmq::send_flags::none);

/// The payload bytes of a received message whose envelope frame is parts[first], decoded as
/// `frame`: the envelope frame's trailing bytes when it is the message's last frame, else the one
/// frame after it (a view into `parts`; empty for a message that takes no payload). nullopt when
/// the frames do not match the envelope's payload size, or frames were dropped.
std::optional<std::string_view> payload_of(const std::vector<zmq::message_t>& parts,
                                           std::size_t first, std::size_t dropped,
                                           const PoolFrame& frame);
/// The same payload as a frame to keep (the broker): the payload frame itself, or a copy of an
/// inline payload. False where payload_of gives nullopt.
bool take_payload(std::vector<zmq::message_t>& parts, std::size_t first, std::size_t dropped,
                  const PoolFrame& frame, zmq::message_t& payload);
/// The same payload for a worker's handler: a payload frame of its own moved out of `parts` and
/// read in place, an inline payload (at most kPoolInlinePayloadBytes) copied into a string,
/// which costs less than keeping the envelope frame. nullopt where payload_of gives nullopt.
std::optional<PoolBytes> take_payload_bytes(std::vector<zmq::message_t>& parts, std::size_t first,
                                            std::size_t dropped, const PoolFrame& frame);

/// Names the calling thread (at most 15 characters shown) for top -H, perf and /proc: the pool's
/// threads are "pool-broker", "pool-worker" and "pool-client"; ZeroMQ's own are "ZMQbg/...".
void name_this_thread(const char* name);

using SteadyTime = std::chrono::steady_clock::time_point;

/// Lets through at most `per_second` log lines a second and counts the rest, so a flood of bad
/// frames cannot flood the log. `allow()` returns how many were suppressed since the last line
/// allowed (to print with it), or nullopt when this line must be suppressed.
class LogLimiter {
 public:
  explicit LogLimiter(int per_second) : per_second_(per_second) {}
  std::optional<std::uint64_t> allow(SteadyTime now);

 private:
  int per_second_;
  SteadyTime window_start_{};
  int in_window_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace cuda_agent
