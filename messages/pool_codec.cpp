#include "messages/pool_codec.h"

#include "messages/capnp_io.h"
#include "messages/common.capnp.h"
#include "messages/pool.capnp.h"
#include "messages/wire_detail.h"

namespace cuda_agent {
namespace {

using wire_detail::set_error;
using wire_detail::set_header;
using wire_detail::text;

// ---- encoding ----------------------------------------------------------------------------------

void set_texts(capnp::List<capnp::Text>::Builder list, const std::vector<std::string>& items) {
  for (unsigned i = 0; i < items.size(); ++i) list.set(i, text(items[i]));
}

// Builds one envelope; `fill` sets the union member.
template <class Fill>
std::string envelope(Fill&& fill) {
  // A zeroed first segment on the stack: envelopes are a few hundred bytes, and the default
  // builder callocs 8 KiB per message (a memset and, in glibc, a consolidation of freed chunks).
  capnp::word first[128] = {};
  capnp::MallocMessageBuilder message(kj::arrayPtr(first, 128));
  auto root = message.initRoot<wire::PoolEnvelope>();
  root.setFormatVersion(wire::FORMAT_VERSION);
  fill(root);
  return capnp_io::to_bytes(message);
}

// ---- decoding ----------------------------------------------------------------------------------

// Decoding helpers record the first problem in `problem` and return a harmless value, so the
// per-message code reads straight; the caller turns a problem into one Error.
struct Reading {
  std::string problem;

  std::string text(capnp::Text::Reader r, const char* field, std::size_t max) {
    if (r.size() > max && problem.empty()) {
      problem = std::string(field) + " is " + std::to_string(r.size()) + " bytes (limit " +
                std::to_string(max) + ")";
    }
    return std::string(r.begin(), r.size() > max ? max : r.size());
  }

  std::vector<std::string> texts(capnp::List<capnp::Text>::Reader list, const char* field,
                                 std::size_t max_items = kPoolMaxTags) {
    std::vector<std::string> out;
    if (list.size() > max_items) {
      if (problem.empty()) {
        problem = std::to_string(list.size()) + " " + field + "s (limit " +
                  std::to_string(max_items) + ")";
      }
      return out;
    }
    out.reserve(list.size());
    for (auto t : list) out.push_back(text(t, field, kPoolMaxTextBytes));
    return out;
  }

  Error error(wire::Error::Reader r) {
    return Error{wire_detail::category_from_wire(r.getCategory()),
                 text(r.getCode(), "error code", kPoolMaxTextBytes),
                 text(r.getMessage(), "error message", kPoolMaxErrorMessageBytes)};
  }

  RequestHeader header(wire::RequestHeader::Reader r) {
    RequestHeader h;
    h.format_version = r.getFormatVersion();
    if ((h.format_version == 0 || h.format_version > wire::FORMAT_VERSION) && problem.empty()) {
      problem = "request header format version " + std::to_string(h.format_version);
    }
    h.request_id = RequestId{text(r.getRequestId(), "request id", kPoolMaxTextBytes)};
    h.run_id = RunId{text(r.getRunId(), "run id", kPoolMaxTextBytes)};
    h.policy_version = PolicyVersion{r.getPolicyVersion()};
    h.deadline_unix_ms = r.getDeadlineUnixMs();
    return h;
  }

  PoolWorkerStats worker(wire::PoolWorkerStats::Reader r) {
    PoolWorkerStats w;
    w.worker_id = WorkerId{text(r.getWorkerId(), "worker id", kPoolMaxTextBytes)};
    w.tags = texts(r.getTags(), "tag");
    w.slots = r.getSlots();
    w.busy = r.getBusy();
    w.completed = r.getCompleted();
    w.failed = r.getFailed();
    w.latency_p50_us = r.getLatencyP50Micros();
    w.latency_p99_us = r.getLatencyP99Micros();
    return w;
  }
};

// Fills `out` in place: each moved std::variant of the pool's messages cost a visit, and a
// decode used to move its message three times on the broker's path.
Status read_envelope(wire::PoolEnvelope::Reader r, PoolMessage& out) {
  const auto version = r.getFormatVersion();
  if (version == 0 || version > wire::FORMAT_VERSION) {
    return make_error(ErrorCategory::kInvalidInput, "wire.version",
                      "PoolEnvelope: format version " + std::to_string(version) +
                          " (this build reads 1.." + std::to_string(wire::FORMAT_VERSION) + ")");
  }
  Reading in;
  switch (r.which()) {
    case wire::PoolEnvelope::SUBMIT: {
      auto s = r.getSubmit();
      auto& m = out.emplace<PoolSubmit>();
      m.header = in.header(s.getHeader());
      m.tags = in.texts(s.getTags(), "tag");
      m.payload_bytes = s.getPayloadBytes();
      break;
    }
    case wire::PoolEnvelope::REPLY: {
      auto s = r.getReply();
      auto& m = out.emplace<PoolReply>();
      m.request_id = RequestId{in.text(s.getRequestId(), "request id", kPoolMaxTextBytes)};
      if (s.which() == wire::PoolReply::ERROR) {
        m.error = in.error(s.getError());
      } else {
        m.payload_bytes = s.getPayloadBytes();
      }
      m.attempts = s.getAttempts();
      m.worker_id = WorkerId{in.text(s.getWorkerId(), "worker id", kPoolMaxTextBytes)};
      break;
    }
    case wire::PoolEnvelope::READY: {
      auto s = r.getReady();
      auto& m = out.emplace<PoolReady>();
      m.worker_id = WorkerId{in.text(s.getWorkerId(), "worker id", kPoolMaxTextBytes)};
      m.tags = in.texts(s.getTags(), "tag");
      m.slots = s.getSlots();
      m.running = in.texts(s.getRunning(), "running id", kPoolMaxRunning);
      break;
    }
    case wire::PoolEnvelope::HEARTBEAT: {
      auto s = r.getHeartbeat();
      out = PoolHeartbeat{WorkerId{in.text(s.getWorkerId(), "worker id", kPoolMaxTextBytes)},
                          s.getSeq()};
      break;
    }
    case wire::PoolEnvelope::RESULT: {
      auto s = r.getResult();
      auto& m = out.emplace<PoolResult>();
      m.request_id = RequestId{in.text(s.getRequestId(), "request id", kPoolMaxTextBytes)};
      if (s.which() == wire::PoolResult::ERROR) {
        m.error = in.error(s.getError());
      } else {
        m.payload_bytes = s.getPayloadBytes();
      }
      break;
    }
    case wire::PoolEnvelope::WORK: {
      auto s = r.getWork();
      auto& m = out.emplace<PoolWork>();
      m.header = in.header(s.getHeader());
      m.payload_bytes = s.getPayloadBytes();
      m.attempt = s.getAttempt();
      break;
    }
    case wire::PoolEnvelope::REREGISTER: out = PoolReregister{}; break;
    case wire::PoolEnvelope::DISCONNECT:
      out = PoolDisconnect{
          WorkerId{in.text(r.getDisconnect().getWorkerId(), "worker id", kPoolMaxTextBytes)}};
      break;
    case wire::PoolEnvelope::STATS_REQUEST: out = PoolStatsRequest{}; break;
    case wire::PoolEnvelope::STATS: {
      auto s = r.getStats();
      auto& m = out.emplace<PoolStats>();
      m.queue_depth = s.getQueueDepth();
      m.in_flight = s.getInFlight();
      auto workers = s.getWorkers();
      if (workers.size() > kPoolMaxWorkersInStats) {
        return capnp_io::malformed("PoolStats: too many workers");
      }
      for (auto w : workers) m.workers.push_back(in.worker(w));
      m.submitted = s.getSubmitted();
      m.completed = s.getCompleted();
      m.rejected_busy = s.getRejectedBusy();
      m.expired = s.getExpired();
      m.late_results = s.getLateResults();
      m.cache_hits = s.getCacheHits();
      m.attached = s.getAttached();
      m.requeued = s.getRequeued();
      m.attempts_exhausted = s.getAttemptsExhausted();
      m.malformed_frames = s.getMalformedFrames();
      m.workers_lost = s.getWorkersLost();
      m.unknown_results = s.getUnknownResults();
      m.wakes = s.getWakes();
      m.messages_read = s.getMessagesRead();
      break;
    }
    default:
      return make_error(
          ErrorCategory::kInvalidInput, "wire.malformed",
          "PoolEnvelope: unknown message type " + std::to_string(static_cast<unsigned>(r.which())));
  }
  if (!in.problem.empty()) {
    return capnp_io::malformed("PoolEnvelope " + std::string(pool_message_name(out)) + ": " +
                               in.problem);
  }
  return Status::ok();
}

}  // namespace

std::string_view pool_message_name(const PoolMessage& message) {
  static constexpr std::string_view kNames[] = {"submit",       "reply", "ready",      "heartbeat",
                                                "result",       "work",  "reregister", "disconnect",
                                                "statsRequest", "stats"};
  return kNames[message.index()];
}

bool has_payload_frame(const PoolMessage& m) {
  if (std::holds_alternative<PoolSubmit>(m) || std::holds_alternative<PoolWork>(m)) return true;
  if (auto* r = std::get_if<PoolReply>(&m)) return !r->error;
  if (auto* r = std::get_if<PoolResult>(&m)) return !r->error;
  return false;
}

std::uint64_t payload_frame_bytes(const PoolMessage& m) {
  if (auto* s = std::get_if<PoolSubmit>(&m)) return s->payload_bytes;
  if (auto* w = std::get_if<PoolWork>(&m)) return w->payload_bytes;
  if (auto* r = std::get_if<PoolReply>(&m)) return r->error ? 0 : r->payload_bytes;
  if (auto* r = std::get_if<PoolResult>(&m)) return r->error ? 0 : r->payload_bytes;
  return 0;
}

std::string encode_pool(const PoolSubmit& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initSubmit();
    set_header(s.initHeader(), m.header);
    set_texts(s.initTags(static_cast<unsigned>(m.tags.size())), m.tags);
    s.setPayloadBytes(m.payload_bytes);
  });
}

std::string encode_pool(const PoolReply& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initReply();
    s.setRequestId(text(m.request_id.value()));
    if (m.error) {
      set_error(s.initError(), *m.error);
    } else {
      s.setPayloadBytes(m.payload_bytes);
    }
    s.setAttempts(m.attempts);
    s.setWorkerId(text(m.worker_id.value()));
  });
}

std::string encode_pool(const PoolReady& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initReady();
    s.setWorkerId(text(m.worker_id.value()));
    set_texts(s.initTags(static_cast<unsigned>(m.tags.size())), m.tags);
    s.setSlots(m.slots);
    set_texts(s.initRunning(static_cast<unsigned>(m.running.size())), m.running);
  });
}

std::string encode_pool(const PoolHeartbeat& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initHeartbeat();
    s.setWorkerId(text(m.worker_id.value()));
    s.setSeq(m.seq);
  });
}

std::string encode_pool(const PoolResult& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initResult();
    s.setRequestId(text(m.request_id.value()));
    if (m.error) {
      set_error(s.initError(), *m.error);
    } else {
      s.setPayloadBytes(m.payload_bytes);
    }
  });
}

std::string encode_pool(const PoolWork& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initWork();
    set_header(s.initHeader(), m.header);
    s.setPayloadBytes(m.payload_bytes);
    s.setAttempt(m.attempt);
  });
}

std::string encode_pool(const PoolReregister&) {
  return envelope([](wire::PoolEnvelope::Builder root) { root.setReregister(); });
}

std::string encode_pool(const PoolDisconnect& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    root.initDisconnect().setWorkerId(text(m.worker_id.value()));
  });
}

std::string encode_pool(const PoolStatsRequest&) {
  return envelope([](wire::PoolEnvelope::Builder root) { root.setStatsRequest(); });
}

std::string encode_pool(const PoolStats& m) {
  return envelope([&](wire::PoolEnvelope::Builder root) {
    auto s = root.initStats();
    s.setQueueDepth(m.queue_depth);
    s.setInFlight(m.in_flight);
    auto workers = s.initWorkers(static_cast<unsigned>(m.workers.size()));
    for (unsigned i = 0; i < m.workers.size(); ++i) {
      const PoolWorkerStats& w = m.workers[i];
      auto b = workers[i];
      b.setWorkerId(text(w.worker_id.value()));
      set_texts(b.initTags(static_cast<unsigned>(w.tags.size())), w.tags);
      b.setSlots(w.slots);
      b.setBusy(w.busy);
      b.setCompleted(w.completed);
      b.setFailed(w.failed);
      b.setLatencyP50Micros(w.latency_p50_us);
      b.setLatencyP99Micros(w.latency_p99_us);
    }
    s.setSubmitted(m.submitted);
    s.setCompleted(m.completed);
    s.setRejectedBusy(m.rejected_busy);
    s.setExpired(m.expired);
    s.setLateResults(m.late_results);
    s.setCacheHits(m.cache_hits);
    s.setAttached(m.attached);
    s.setRequeued(m.requeued);
    s.setAttemptsExhausted(m.attempts_exhausted);
    s.setMalformedFrames(m.malformed_frames);
    s.setWorkersLost(m.workers_lost);
    s.setUnknownResults(m.unknown_results);
    s.setWakes(m.wakes);
    s.setMessagesRead(m.messages_read);
  });
}

std::string encode_pool_message(const PoolMessage& m) {
  return std::visit([](const auto& v) { return encode_pool(v); }, m);
}

namespace {

Status read_pool(std::string_view bytes, const DecodeLimits& limits, PoolMessage& out) {
  return capnp_io::read_root<wire::PoolEnvelope>(
      bytes, limits, "PoolEnvelope",
      [&](wire::PoolEnvelope::Reader r) { return read_envelope(r, out); });
}

// The length of the Cap'n Proto message at the start of `frame`, from its segment table
// (capnp::expectedSizeInWordsFromPrefix, on an aligned copy of the table: frames need not be
// 8-byte aligned); the whole frame when the table does not fit in it, which the decoder reports.
std::size_t envelope_bytes(std::string_view frame) {
  constexpr std::size_t kMaxSegments = 512;
  if (frame.size() < sizeof(capnp::word)) return frame.size();
  std::uint32_t last_segment;
  std::memcpy(&last_segment, frame.data(), sizeof last_segment);
  const std::uint64_t segments = std::uint64_t{last_segment} + 1;
  const std::size_t table_words = static_cast<std::size_t>(segments / 2 + 1);
  if (segments > kMaxSegments || table_words * sizeof(capnp::word) > frame.size()) {
    return frame.size();
  }
  capnp::word table[kMaxSegments / 2 + 1];
  std::memcpy(table, frame.data(), table_words * sizeof(capnp::word));
  const std::size_t words = capnp::expectedSizeInWordsFromPrefix(kj::arrayPtr(table, table_words));
  return words * sizeof(capnp::word) <= frame.size() ? words * sizeof(capnp::word) : frame.size();
}

}  // namespace

Expected<PoolMessage> decode_pool_message(std::string_view bytes, const DecodeLimits& limits) {
  Expected<PoolMessage> out(std::in_place, PoolMessage{});
  if (Status read = read_pool(bytes, limits, *out); !read) return read.error();
  return out;
}

Expected<PoolFrame> decode_pool_frame(std::string_view frame, const DecodeLimits& limits) {
  auto too_large = [](const std::string& what) {
    return make_error(ErrorCategory::kInvalidInput, "wire.too_large", "PoolEnvelope: " + what);
  };
  if (frame.size() > limits.max_bytes + kPoolInlinePayloadBytes) {
    return too_large("frame of " + std::to_string(frame.size()) +
                     " bytes exceeds the envelope limit of " + std::to_string(limits.max_bytes) +
                     " bytes and an inline payload's " + std::to_string(kPoolInlinePayloadBytes));
  }
  const std::size_t split = envelope_bytes(frame);
  Expected<PoolFrame> out(std::in_place, PoolFrame{});
  if (Status read = read_pool(frame.substr(0, split), limits, out->message); !read) {
    return read.error();
  }
  const PoolMessage& m = out->message;
  const std::string_view trailing = frame.substr(split);
  if (trailing.size() > kPoolInlinePayloadBytes) {
    return too_large("inline payload of " + std::to_string(trailing.size()) + " bytes exceeds " +
                     std::to_string(kPoolInlinePayloadBytes) +
                     "; a larger payload goes in a frame of its own");
  }
  if (!trailing.empty() && !has_payload_frame(m)) {
    return capnp_io::malformed("PoolEnvelope: " + std::to_string(trailing.size()) +
                               " bytes after a " + std::string(pool_message_name(m)) +
                               " envelope, which takes no payload");
  }
  out->trailing = trailing;
  return out;
}

}  // namespace cuda_agent
