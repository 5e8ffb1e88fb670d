# Work-pool envelopes: what pool clients, the work-pool broker and pool workers (compile farm, GPU
# bench pool) say to each other over ZeroMQ. Add-only once released: new fields and new union
# members get new ordinals at the end; nothing is renamed, renumbered or removed.
#
# Framing (docs/formats/pool.md): every ZeroMQ message is one PoolEnvelope frame, followed by
# exactly one payload frame when the envelope's member has a `payloadBytes` field set (Submit,
# Work, a successful Result or Reply). The payload is opaque to the pool (a compile or bench
# request of its own schema); keeping it out of the envelope lets the broker forward it without
# copying or parsing it, and lets envelopes have a small size limit of their own.
@0x97178807123ef73c;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

using Common = import "common.capnp";

# The root of every pool frame. Exactly one union member is set; a peer rejects a member that is
# not addressed to it ("pool.unexpected_message").
struct PoolEnvelope {
  formatVersion @0 :UInt16;         # the sender's Common.formatVersion; 0 (unset) is rejected
  union {
    submit @1 :PoolSubmit;          # client -> broker: run this request
    reply @2 :PoolReply;            # broker -> client: the outcome of a request
    ready @3 :PoolReady;            # worker -> broker: I can take work (sent on every connect)
    heartbeat @4 :PoolHeartbeat;    # worker -> broker, echoed broker -> worker: still alive
    result @5 :PoolResult;          # worker -> broker: the outcome of one Work
    work @6 :PoolWork;              # broker -> worker: run this request
    reregister @7 :Void;            # broker -> worker: I do not know you; send Ready again
    disconnect @8 :PoolDisconnect;  # worker -> broker: leaving, send me nothing more
    statsRequest @9 :Void;          # client -> broker: send me a PoolStats
    stats @10 :PoolStats;           # broker -> client: the answer to statsRequest
  }
}

# A request for the pool. Followed by one payload frame of payloadBytes bytes.
struct PoolSubmit {
  header @0 :Common.RequestHeader;  # request id (idempotency key), run, deadline (required)
  tags @1 :List(Text);              # capabilities the worker must all have, e.g. "gpu:NVIDIA H200"
  payloadBytes @2 :UInt64;          # size of the payload frame that follows
}

# The outcome of a request, sent to every client waiting on its request id.
struct PoolReply {
  requestId @0 :Text;               # the request answered; empty when the request was unreadable
  union {
    payloadBytes @1 :UInt64;        # success: size of the result payload frame that follows
    error @2 :Common.Error;         # failure: from the worker's handler or from the broker
  }
  attempts @3 :UInt32;              # how many times the request was given to a worker
  workerId @4 :Text;                # the worker that produced the outcome; empty if none
}

# A worker announcing itself; sent when it connects and whenever the broker asks (reregister).
struct PoolReady {
  workerId @0 :Text;                # unique within the pool
  tags @1 :List(Text);              # capabilities this worker offers
  slots @2 :UInt32;                 # how many requests the broker may give it at once (>= 1)
  running @3 :List(Text);           # request ids it holds already (queued or running), e.g. when
                                    # it re-registers with a restarted broker; they occupy slots
                                    # until their results arrive
}

# Liveness. A worker sends one every heartbeat interval; the broker echoes it back so the worker
# can tell a dead or restarted broker.
struct PoolHeartbeat {
  workerId @0 :Text;                # the sender (empty when the broker echoes)
  seq @1 :UInt64;                   # increases by one per heartbeat of the sender
}

# The outcome of one Work, from the worker that ran it.
struct PoolResult {
  requestId @0 :Text;               # the request this answers
  union {
    payloadBytes @1 :UInt64;        # success: size of the result payload frame that follows
    error @2 :Common.Error;         # the handler's typed error
  }
}

# One request given to a worker. Followed by one payload frame of payloadBytes bytes.
struct PoolWork {
  header @0 :Common.RequestHeader;  # as submitted; the worker checks the deadline before running
  payloadBytes @1 :UInt64;          # size of the payload frame that follows
  attempt @2 :UInt32;               # 1 for the first delivery, 2 after one lost worker, ...
}

# A worker leaving on purpose; its unfinished requests are re-queued at once.
struct PoolDisconnect {
  workerId @0 :Text;                # the worker leaving
}

# One worker as the broker sees it.
struct PoolWorkerStats {
  workerId @0 :Text;                # as announced in Ready
  tags @1 :List(Text);              # as announced in Ready
  slots @2 :UInt32;                 # as announced in Ready
  busy @3 :UInt32;                  # requests it is running now
  completed @4 :UInt64;             # results it returned (successes and handler errors)
  failed @5 :UInt64;                # of those, handler errors
  latencyP50Micros @6 :UInt64;      # dispatch-to-result time, median of the last 1024 results
  latencyP99Micros @7 :UInt64;      # dispatch-to-result time, 99th percentile of the same
}

# A snapshot of the broker. Counters count since the broker started.
struct PoolStats {
  queueDepth @0 :UInt64;            # requests waiting for a worker
  inFlight @1 :UInt64;              # requests on a worker now
  workers @2 :List(PoolWorkerStats);  # the workers registered now
  submitted @3 :UInt64;             # Submit messages accepted (duplicates included)
  completed @4 :UInt64;             # requests answered with a worker's outcome
  rejectedBusy @5 :UInt64;          # answered "pool.busy" because the queue was full
  expired @6 :UInt64;               # answered with a timeout (in queue or on a worker)
  lateResults @7 :UInt64;           # worker results dropped because their deadline had passed
  cacheHits @8 :UInt64;             # repeated request ids answered from the result cache
  attached @9 :UInt64;              # repeated request ids attached to the same in-flight request
  requeued @10 :UInt64;             # requests put back in the queue after their worker was lost
  attemptsExhausted @11 :UInt64;    # requests failed after too many lost workers
  malformedFrames @12 :UInt64;      # frames rejected as unreadable or unexpected
  workersLost @13 :UInt64;          # workers dropped for missing heartbeats or that left
  unknownResults @14 :UInt64;       # results for requests the broker does not know (dropped)
  wakes @15 :UInt64;                # times the broker thread woke because a client or worker
                                    # socket had something to read
  messagesRead @16 :UInt64;         # messages it read from clients and workers; per wake, how
                                    # many arrive together (batching under load)
}
