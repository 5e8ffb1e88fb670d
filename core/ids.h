// Strong identifier types: a request id cannot be passed where a worker id is expected.
//
//   RequestId id{"r-42"};   PolicyVersion v{7};   if (v < PolicyVersion{8}) ...
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace cuda_agent {

template <class Tag, class Rep>
class StrongId {
 public:
  using rep_type = Rep;
  StrongId() = default;
  explicit StrongId(Rep value) : value_(std::move(value)) {}
  const Rep& value() const { return value_; }
  // Spelled out rather than `<=> = default`: messages/ includes this at C++17 (see there).
  friend bool operator==(const StrongId& a, const StrongId& b) { return a.value_ == b.value_; }
  friend bool operator!=(const StrongId& a, const StrongId& b) { return a.value_ != b.value_; }
  friend bool operator<(const StrongId& a, const StrongId& b) { return a.value_ < b.value_; }
  friend bool operator<=(const StrongId& a, const StrongId& b) { return a.value_ <= b.value_; }
  friend bool operator>(const StrongId& a, const StrongId& b) { return a.value_ > b.value_; }
  friend bool operator>=(const StrongId& a, const StrongId& b) { return a.value_ >= b.value_; }

 private:
  Rep value_{};
};

struct RequestIdTag {};
struct RunIdTag {};
struct WorkerIdTag {};
struct PolicyVersionTag {};

/// Idempotency key of a request: a retried request carries the same id and gets the stored answer.
using RequestId = StrongId<RequestIdTag, std::string>;
/// One training or evaluation run; names its store and its logs.
using RunId = StrongId<RunIdTag, std::string>;
/// One worker process of a pool (compile, bench, rollout), unique within a run.
using WorkerId = StrongId<WorkerIdTag, std::string>;
/// Version of the policy weights; increases by one per learner update.
using PolicyVersion = StrongId<PolicyVersionTag, std::uint64_t>;

}  // namespace cuda_agent

template <class Tag, class Rep>
struct std::hash<cuda_agent::StrongId<Tag, Rep>> {
  std::size_t operator()(const cuda_agent::StrongId<Tag, Rep>& id) const {
    return std::hash<Rep>{}(id.value());
  }
};
