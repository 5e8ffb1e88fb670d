// Codecs between the work-pool envelopes (messages/pool.capnp) and plain C++ types. Used by the
// broker, worker and client in actors/ (actors/work_pool_broker.h); nothing else needs them.
//
// A pool ZeroMQ message is one envelope frame, then one payload frame when the envelope says so
// (`has_payload_frame`); the payload is opaque bytes and never passes through these codecs. A
// payload of at most kPoolInlinePayloadBytes may instead follow the Cap'n Proto message inside
// the envelope frame, which is then the message's only frame (`decode_pool_frame` splits it):
// one frame fewer for every hop of a small request.
//
//   std::string frame = encode_pool(PoolHeartbeat{WorkerId{"w1"}, 7});
//   Expected<PoolMessage> m = decode_pool_message(frame);
//   if (m) if (auto* hb = std::get_if<PoolHeartbeat>(&*m)) ...
//
// Decoding never trusts its input: truncated, garbage, oversized bytes, an unset or newer format
// version, over-long ids or too many tags give an Error (category invalid_input; code
// "wire.malformed", "wire.too_large" or "wire.version"), never an exception or a crash.
// Stateless; safe from any thread. Built as C++17 (messages/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/ids.h"
#include "messages/common_codec.h"

namespace cuda_agent {

/// Structural limits every decoded envelope must meet.
inline constexpr std::size_t kPoolMaxTags = 64;
inline constexpr std::size_t kPoolMaxRunning = 4096;    // PoolReady.running
inline constexpr std::size_t kPoolMaxTextBytes = 1024;  // ids, tags, error codes
inline constexpr std::size_t kPoolMaxErrorMessageBytes = 64 * 1024;
inline constexpr std::size_t kPoolMaxWorkersInStats = 65536;

/// client -> broker: run this request. Followed by a payload frame of `payload_bytes`.
struct PoolSubmit {
  RequestHeader header;
  std::vector<std::string> tags;
  std::uint64_t payload_bytes = 0;
};

/// broker -> client. `error` set: failure, no payload frame; else a payload frame follows.
struct PoolReply {
  RequestId request_id;
  std::optional<Error> error;
  std::uint64_t payload_bytes = 0;
  std::uint32_t attempts = 0;
  WorkerId worker_id;
};

/// worker -> broker, on every connect and on PoolReregister.
struct PoolReady {
  WorkerId worker_id;
  std::vector<std::string> tags;
  std::uint32_t slots = 1;
  std::vector<std::string> running;  ///< request ids it holds already (after a broker restart)
};

/// worker -> broker, echoed back by the broker.
struct PoolHeartbeat {
  WorkerId worker_id;
  std::uint64_t seq = 0;
};

/// worker -> broker. `error` set: failure, no payload frame; else a payload frame follows.
struct PoolResult {
  RequestId request_id;
  std::optional<Error> error;
  std::uint64_t payload_bytes = 0;
};

/// broker -> worker. Followed by a payload frame of `payload_bytes`.
struct PoolWork {
  RequestHeader header;
  std::uint64_t payload_bytes = 0;
  std::uint32_t attempt = 1;
};

/// broker -> worker: "I do not know you, send PoolReady again".
struct PoolReregister {};

/// worker -> broker: leaving on purpose.
struct PoolDisconnect {
  WorkerId worker_id;
};

/// client -> broker: ask for a PoolStats.
struct PoolStatsRequest {};

/// One worker as the broker sees it (messages/pool.capnp PoolWorkerStats).
struct PoolWorkerStats {
  WorkerId worker_id;
  std::vector<std::string> tags;
  std::uint32_t slots = 0;
  std::uint32_t busy = 0;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint64_t latency_p50_us = 0;
  std::uint64_t latency_p99_us = 0;
};

/// A broker snapshot; every counter is documented in messages/pool.capnp PoolStats.
struct PoolStats {
  std::uint64_t queue_depth = 0;
  std::uint64_t in_flight = 0;
  std::vector<PoolWorkerStats> workers;
  std::uint64_t submitted = 0;
  std::uint64_t completed = 0;
  std::uint64_t rejected_busy = 0;
  std::uint64_t expired = 0;
  std::uint64_t late_results = 0;
  std::uint64_t cache_hits = 0;
  std::uint64_t attached = 0;
  std::uint64_t requeued = 0;
  std::uint64_t attempts_exhausted = 0;
  std::uint64_t malformed_frames = 0;
  std::uint64_t workers_lost = 0;
  std::uint64_t unknown_results = 0;
  std::uint64_t wakes = 0;
  std::uint64_t messages_read = 0;
};

/// Any decoded envelope; the alternative says which member was set.
using PoolMessage =
    std::variant<PoolSubmit, PoolReply, PoolReady, PoolHeartbeat, PoolResult, PoolWork,
                 PoolReregister, PoolDisconnect, PoolStatsRequest, PoolStats>;

/// "submit", "reply", ... as in the schema; for logs and errors.
std::string_view pool_message_name(const PoolMessage& message);

/// Whether a payload frame must follow this envelope, and how large it must be.
bool has_payload_frame(const PoolMessage& message);
std::uint64_t payload_frame_bytes(const PoolMessage& message);

/// One flat Cap'n Proto message (unpacked framing) holding a PoolEnvelope with the current
/// format version.
std::string encode_pool(const PoolSubmit& m);
std::string encode_pool(const PoolReply& m);
std::string encode_pool(const PoolReady& m);
std::string encode_pool(const PoolHeartbeat& m);
std::string encode_pool(const PoolResult& m);
std::string encode_pool(const PoolWork& m);
std::string encode_pool(const PoolReregister& m);
std::string encode_pool(const PoolDisconnect& m);
std::string encode_pool(const PoolStatsRequest& m);
std::string encode_pool(const PoolStats& m);
std::string encode_pool_message(const PoolMessage& m);

/// Decodes one envelope frame. Errors as described at the top of this file.
Expected<PoolMessage> decode_pool_message(std::string_view bytes, const DecodeLimits& limits = {});

/// Senders append payloads up to this size to the envelope frame; larger ones get their own frame
/// (sent without a copy). Readers accept either form; a larger inline payload is refused
/// ("wire.too_large").
inline constexpr std::size_t kPoolInlinePayloadBytes = 1024;

/// An envelope frame split in two: the decoded envelope and the bytes after its Cap'n Proto
/// message (a view into the frame: an inline payload, or empty).
struct PoolFrame {
  PoolMessage message;
  std::string_view trailing;
};

/// Decodes an envelope frame that may carry an inline payload. `limits.max_bytes` bounds the
/// envelope alone, kPoolInlinePayloadBytes the bytes after it. Bytes after a message that takes no
/// payload are an error ("wire.malformed"); whether trailing bytes match the payload size is the
/// caller's check (it knows the frames).
Expected<PoolFrame> decode_pool_frame(std::string_view frame, const DecodeLimits& limits = {});

}  // namespace cuda_agent
