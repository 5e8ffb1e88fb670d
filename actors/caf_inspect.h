// CAF 0.17 `inspect` overloads for the project's shared value types that travel in actor messages
// (strong ids, Error, the store's episode, evaluation and baseline records, std::optional of any
// of them), so the messages of the coordinator's and the rollout worker's protocols are proper CAF
// types (serializable, printable by deep_to_string) and never CAF_ALLOW_UNSAFE_MESSAGE_TYPE. Found
// by argument-dependent lookup (namespace cuda_agent).
//
// They live in actors/, beside the actor runtime, because core/ and messages/ do not depend on
// CAF.
//
// Threading: free functions without state.
#pragma once

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/none.hpp>

#include <optional>
#include <utility>

#include "core/error.h"
#include "core/ids.h"
#include "messages/store_codec.h"

namespace cuda_agent {

/// A strong id as its representation; a load rebuilds the id from it.
template <class Inspector, class Tag, class Rep>
typename Inspector::result_type inspect(Inspector& f, StrongId<Tag, Rep>& x) {
  Rep rep = x.value();
  auto rebuild = caf::meta::load_callback([&]() -> caf::error {
    x = StrongId<Tag, Rep>{rep};
    return caf::none;
  });
  return f(rep, rebuild);
}

/// std::optional<T> for a T of this namespace (CAF 0.17 knows only caf::optional): a presence flag
/// and the value (default-constructed when absent). Argument-dependent lookup finds it through T.
template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, std::optional<T>& x) {
  bool present = x.has_value();
  T value = present ? *x : T{};
  auto rebuild = caf::meta::load_callback([&]() -> caf::error {
    if (present) {
      x = std::move(value);
    } else {
      x.reset();
    }
    return caf::none;
  });
  return f(present, value, rebuild);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Error& x) {
  return f(caf::meta::type_name("cuda_agent.Error"), x.category, x.code, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EpisodeRecord& x) {
  return f(caf::meta::type_name("cuda_agent.EpisodeRecord"), x.episode_id, x.run_id, x.task_id,
           x.stage, x.policy_version, x.status, x.final_reward, x.turns, x.invalid_tool_calls,
           x.wasted_loops, x.total_tokens, x.created_unix_ms, x.trajectory_size,
           x.trajectory_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EvaluationRecord& x) {
  return f(caf::meta::type_name("cuda_agent.EvaluationRecord"), x.evaluation_id, x.run_id,
           x.task_id, x.episode_id, x.artifact_hash, x.reward, x.verified, x.speedup_vs_eager,
           x.speedup_vs_compile, x.audit, x.created_unix_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, BaselineRecord& x) {
  return f(caf::meta::type_name("cuda_agent.BaselineRecord"), x.task_id, x.device, x.torch_version,
           x.precision, x.eager_ms, x.compile_ms, x.recorded_unix_ms);
}

}  // namespace cuda_agent
