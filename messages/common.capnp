# Common wire types: every request header and every typed error. Add-only once released: new
# fields get new ordinals at the end; nothing is renamed, renumbered or removed.
@0x9e5150c9ae0f49fc;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cuda_agent::wire");

# The format version every message of this project carries in its header. Raised when a change
# needs a reader to know (new required semantics); add-only field changes keep it.
const formatVersion :UInt16 = 1;

# Mirrors cuda_agent::ErrorCategory (core/error.h); decides how a caller reacts.
enum ErrorCategory {
  internal @0;      # a bug or unexpected state; the default so an unset category is not "ok"
  invalidInput @1;  # the caller's input is wrong; do not retry
  notFound @2;      # a named thing does not exist
  io @3;            # the filesystem or a device failed
  timeout @4;       # a deadline passed
  unavailable @5;   # a peer or resource is gone or busy; retrying later may succeed
  policy @6;        # a solution broke a rule of the evaluation protocol
}

# A typed error: what every reply carries instead of a result when something failed.
struct Error {
  category @0 :ErrorCategory;  # kind of failure
  code @1 :Text;               # stable snake_case identifier, e.g. "broker.busy"
  message @2 :Text;            # for people: what was wrong and where
}

# Carried by every request (DESIGN.md section 3).
struct RequestHeader {
  formatVersion @0 :UInt16;     # the sender's formatVersion
  requestId @1 :Text;           # idempotency key: a retried request returns the stored answer
  runId @2 :Text;               # the run this request belongs to
  policyVersion @3 :UInt64;     # policy weights version where it matters, else 0
  deadlineUnixMs @4 :Int64;     # absolute deadline, milliseconds since the Unix epoch (UTC)
}
