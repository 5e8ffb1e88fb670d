#include "rollout/coordinated_rollout.h"

#include <caf/all.hpp>

#include <string_view>
#include <vector>

#include "actors/actor_runtime.h"
#include "rollout/generation_gate.h"
#include "rollout/rollout_worker_actor.h"

namespace cuda_agent {
namespace {

// A blocking WorkSource as a work_source_actor: a router that hands work requests to one
// detached caller and submissions to another, so a submission never waits behind a work request
// that waits for an unreachable coordinator (each call is bounded by the source's own timeout).
// A caller answers the source's reply, or its Error as a caf::error (to_caf_error).
struct BlockingSourceActors {
  work_source_actor router;
  std::vector<caf::actor> all;  // router and callers, to wait for at the end
};

work_source_actor spawn_blocking_caller(caf::actor_system& system, WorkSource& source) {
  return system.spawn<caf::detached>(
      [&source](work_source_actor::pointer) -> work_source_actor::behavior_type {
        return {
            [&source](work_atom, const WorkRequest&) -> caf::result<WorkReply> {
              Expected<WorkReply> r = source.request_work();
              if (!r) return to_caf_error(r.error());
              return std::move(*r);
            },
            [&source](submit_atom, const TrajectorySubmission& s) -> caf::result<SubmitReply> {
              Expected<SubmitReply> r = source.submit(s);
              if (!r) return to_caf_error(r.error());
              return std::move(*r);
            },
        };
      });
}

BlockingSourceActors spawn_blocking_source(caf::actor_system& system, WorkSource& source) {
  BlockingSourceActors out;
  work_source_actor work = spawn_blocking_caller(system, source);
  work_source_actor submit = spawn_blocking_caller(system, source);
  out.router = system.spawn(
      [work, submit](work_source_actor::pointer self) -> work_source_actor::behavior_type {
        return {
            [self, work](work_atom a, WorkRequest& r) {
              return self->delegate(work, a, std::move(r));
            },
            [self, submit](submit_atom a, TrajectorySubmission& s) {
              return self->delegate(submit, a, std::move(s));
            },
        };
      });
  out.all = {caf::actor_cast<caf::actor>(out.router), caf::actor_cast<caf::actor>(work),
             caf::actor_cast<caf::actor>(submit)};
  return out;
}

}  // namespace

bool policy_server_gone(const Error& error) {
  return error.code == "http.connect" || error.code == "http.transport" ||
         error.code == "policy.http_502" || error.code == "policy.http_503";
}

std::uint64_t episode_sampling_seed(const RunId& run, const EpisodeId& episode) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, 64 bits
  for (const std::string_view part :
       {std::string_view(run.value()), std::string_view("/"), std::string_view(episode.value())}) {
    for (const char c : part) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
  }
  h &= 0x7fffffffffffffffULL;
  return h == 0 ? 1 : h;
}

std::string_view to_string(AssignmentOutcome outcome) {
  switch (outcome) {
    case AssignmentOutcome::kAcknowledged: return "acknowledged";
    case AssignmentOutcome::kSuperseded: return "superseded";
    case AssignmentOutcome::kUnknown: return "unknown";
    case AssignmentOutcome::kFailed: return "failed";
    case AssignmentOutcome::kStopped: return "stopped";
  }
  return "unknown";
}

CoordinatedRollout::CoordinatedRollout(caf::actor_system& system, WorkSource& source,
                                       PrepareAssignment prepare, CoordinatedRolloutOptions options,
                                       PolicyProbe policy_probe)
    : CoordinatedRollout(system, work_source_actor{}, std::move(prepare), std::move(options),
                         std::move(policy_probe)) {
  blocking_ = &source;
}

CoordinatedRollout::CoordinatedRollout(caf::actor_system& system, work_source_actor source,
                                       PrepareAssignment prepare, CoordinatedRolloutOptions options,
                                       PolicyProbe policy_probe)
    : system_(system),
      source_(std::move(source)),
      prepare_(std::move(prepare)),
      options_(std::move(options)),
      policy_probe_(std::move(policy_probe)) {
  options_.concurrent_episodes = std::max<std::int64_t>(options_.concurrent_episodes, 1);
  if (options_.generation_slots <= 0) options_.generation_slots = options_.concurrent_episodes;
  options_.retry_initial_ms = std::max<std::int64_t>(options_.retry_initial_ms, 1);
  options_.max_idle_wait_ms = std::max<std::int64_t>(options_.max_idle_wait_ms, 1);
}

CoordinatedRollout::~CoordinatedRollout() = default;

void CoordinatedRollout::request_stop() {
  stop_ = true;
  // A work request waiting for the coordinator's answer must not hold the stop for the request
  // timeout (found on the GPU: a run's last SIGTERM waited out the 15 s stop grace on a work
  // request the finished coordinator never answered).
  if (blocking_) blocking_->cancel_work_requests();
  std::lock_guard lock(mutex_);
  if (worker_)
    caf::anon_send(caf::actor_cast<rollout_worker_actor>(worker_), stop_rollout_atom::value);
}

CoordinatedReport CoordinatedRollout::run(const RunId& run, const CoordinatedHooks& hooks) {
  GenerationGate gate(options_.generation_slots);
  const EpisodeRunnerContext context{.run = run,
                                     .options = options_,
                                     .prepare = prepare_,
                                     .policy_probe = policy_probe_,
                                     .gate = &gate,
                                     .stop = &stop_};
  BlockingSourceActors blocking;
  work_source_actor source = source_;
  if (blocking_) {
    blocking = spawn_blocking_source(system_, *blocking_);
    source = blocking.router;
  }
  // Every runner the worker spawned (also replacements), so that run() returns only once their
  // threads are gone: filled on the worker actor, read here after its report (a message: ordered).
  std::vector<caf::actor> runners;
  RolloutWorkerConfig config{.run = run,
                             .options = options_,
                             .hooks = hooks,
                             .make_runner =
                                 [this, &context, &runners](std::int64_t) {
                                   episode_runner_actor r = spawn_episode_runner(system_, context);
                                   runners.push_back(caf::actor_cast<caf::actor>(r));
                                   return r;
                                 },
                             .stop = &stop_};
  caf::scoped_actor self{system_};
  rollout_worker_actor worker = spawn_rollout_worker(system_, source, std::move(config));
  {
    std::lock_guard lock(mutex_);
    worker_ = caf::actor_cast<caf::actor>(worker);
  }
  CoordinatedReport report;
  self->request(worker, caf::infinite, run_rollout_atom::value)
      .receive([&](CoordinatedReport& r) { report = std::move(r); },
               [&](caf::error& e) {
                 report.error =
                     from_caf_error(system_, e).with_context("the rollout worker failed");
               });
  {
    std::lock_guard lock(mutex_);
    worker_ = nullptr;
  }
  self->wait_for(worker);
  self->wait_for(runners);
  if (blocking_) {
    blocking_->cancel_work_requests();  // a caller waiting on a work request ends at once
    for (const caf::actor& a : blocking.all) self->send_exit(a, caf::exit_reason::user_shutdown);
    self->wait_for(blocking.all);
  }
  report.max_concurrent_generations = gate.max_running();
  return report;
}

}  // namespace cuda_agent
