// The simulated roles: see sim_roles.h.
#include "cluster/sim_roles.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"

namespace cuda_agent::sim {
namespace {

// A lognormal draw around `ms` (its median), by the options' jitter.
double jittered(std::mt19937_64& rng, double ms, double sigma) {
  std::lognormal_distribution<double> d(0.0, sigma);
  return ms * d(rng);
}

// One episode slot of a worker, a small state machine driven by the event loop.
class Slot : public std::enable_shared_from_this<Slot> {
 public:
  Slot(World& world, EventLoop& loop, RolloutWorker& worker, std::uint64_t seed)
      : world_(world), loop_(loop), worker_(worker), rng_(seed) {
    std::lock_guard lock(worker_.mutex);
    index_ = worker_.slots++;
  }

  void ask() {
    if (world_.stopping) return;
    auto self = shared_from_this();
    {
      std::lock_guard lock(worker_.mutex);
      if (!worker_.turn.may_ask(index_)) {
        worker_.waiting.push_back([self] { self->ask(); });
        return;
      }
    }
    const auto t0 = Clock::now();
    Expected<WorkReply> reply = worker_.coordinator->request_work();
    const double ms = ms_since(t0);
    // As the real loop: an assignment, or a coordinator that could not be reached, lets the slots
    // waiting on this one's poll ask for themselves; "none now" keeps them waiting.
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard lock(worker_.mutex);
      const bool open =
          reply ? worker_.turn.answered(index_, reply->assigned) : worker_.turn.reopen();
      if (open) wake.swap(worker_.waiting);
    }
    for (auto& w : wake) loop_.after_ms(0, std::move(w));
    if (!reply) {
      if (world_.stopping) return;
      world_.fail(worker_.id.value() + " work request: " + reply.error().to_string());
      loop_.after_ms(1000, [self] { self->ask(); });
      return;
    }
    if (!reply->assigned) {
      world_.admission.add(ms);
      if (reply->reason == "run finished")
        return;  // rollout/coordinated_rollout.h kRunFinishedReason
      loop_.after_ms(
          static_cast<double>(std::clamp<std::int64_t>(reply->retry_after_ms, 200, 5000)),
          [self] { self->ask(); });
      return;
    }
    world_.dispatch.add(ms);
    assignment_ = reply->assignment;
    const SimLatencies& l = world_.options.latencies;
    if (assignment_.stage == EpisodeStage::kSingleTurnWarmup) {
      turns_left_ = 1;
    } else {
      std::geometric_distribution<std::int64_t> turns(1.0 / std::max(1.0, l.mean_turns));
      turns_left_ = std::clamp<std::int64_t>(1 + turns(rng_), 1, world_.manifest.rollout.max_turns);
    }
    turns_ = 0;
    tokens_ = l.prompt_tokens;
    loop_.after_ms(0, [self] { self->turn(); });
  }

 private:
  void turn() {
    if (turns_left_ <= 0 || tokens_ >= world_.manifest.rollout.max_context_tokens) return submit();
    const SimLatencies& l = world_.options.latencies;
    std::uniform_int_distribution<std::int64_t> new_tokens(
        std::min(l.new_tokens_min, world_.manifest.rollout.max_new_tokens_per_turn),
        std::min(l.new_tokens_max, world_.manifest.rollout.max_new_tokens_per_turn));
    const std::int64_t n = new_tokens(rng_);
    double wait = world_.scaled(n * l.decode_ms_per_token);
    {
      // A version published since this worker's engine last synced: its next decode waits for
      // the weights (the engine serves nothing meanwhile).
      std::lock_guard lock(worker_.mutex);
      const std::uint64_t latest = world_.latest_version;
      const auto now = Clock::now();
      if (worker_.synced_version < latest) {
        worker_.synced_version = latest;
        const double sync_ms = l.model_params * 2 / (l.weight_sync_gb_per_s * 1e9) * 1000;
        worker_.sync_until =
            now + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double, std::milli>(world_.scaled(sync_ms)));
      }
      if (worker_.sync_until > now)
        wait += std::chrono::duration<double, std::milli>(worker_.sync_until - now).count();
    }
    tokens_ += n;
    auto self = shared_from_this();
    loop_.after_ms(wait, [self] { self->tool(); });
  }

  void tool() {
    const SimLatencies& l = world_.options.latencies;
    ++turns_;
    --turns_left_;
    tokens_ += l.tool_tokens_per_turn;
    const bool last = turns_left_ <= 0 || tokens_ >= world_.manifest.rollout.max_context_tokens;
    std::uniform_real_distribution<double> u(0, 1);
    const double draw = u(rng_);
    PoolClient* pool = nullptr;
    Samples* samples = nullptr;
    std::string payload;
    if (last && worker_.bench) {
      pool = worker_.bench.get(), samples = &world_.bench_call, payload = "F";
    } else if (draw < l.compile_per_turn) {
      pool = worker_.compile.get(), samples = &world_.compile_call, payload = "C";
    } else if (draw < l.compile_per_turn + l.bench_per_turn && worker_.bench) {
      pool = worker_.bench.get(), samples = &world_.bench_call, payload = "B";
    }
    auto self = shared_from_this();
    if (pool == nullptr) {
      loop_.after_ms(0, [self] { self->turn(); });
      return;
    }
    // A compile request carries the solution's sources; a bench request the artifact's hash.
    payload.resize(payload == "C" ? 6000 : 300, 'x');
    PoolRequest r;
    r.header.request_id =
        RequestId{assignment_.episode_id.value() + "/" + std::to_string(assignment_.attempt) +
                  "/t" + std::to_string(turns_)};
    r.header.run_id = world_.run;
    r.header.policy_version = assignment_.policy_version;
    r.header.deadline_unix_ms = now_unix_ms() + 600'000;
    r.payload = std::move(payload);
    const auto t0 = Clock::now();
    pool->call_async(std::move(r), [self, samples, t0](PoolOutcome o) {
      samples->add(ms_since(t0));
      if (!o.result && !self->world_.stopping)
        self->world_.fail("pool call of " + self->assignment_.episode_id.value() + ": " +
                          o.result.error().to_string());
      self->loop_.after_ms(0, [self] { self->turn(); });
    });
  }

  void submit() {
    if (world_.stopping) return;
    std::uniform_int_distribution<std::int64_t> reward(-1, 3);
    TrajectorySubmission s;
    s.worker = worker_.id;
    s.attempt = assignment_.attempt;
    EpisodeRecord& e = s.episode;
    e.episode_id = assignment_.episode_id;
    e.run_id = world_.run;
    e.task_id = assignment_.task_id;
    e.stage = assignment_.stage;
    e.policy_version = assignment_.policy_version;
    e.status = EpisodeStatus::kCompleted;
    e.final_reward = static_cast<double>(reward(rng_));
    e.turns = static_cast<std::uint32_t>(turns_);
    e.total_tokens = static_cast<std::uint64_t>(tokens_);
    e.created_unix_ms = now_unix_ms();
    const auto size = static_cast<std::size_t>(
        std::min<double>(tokens_ * world_.options.latencies.trajectory_bytes_per_token,
                         static_cast<double>(world_.random_bytes.size() / 2)));
    std::uniform_int_distribution<std::size_t> offset(0, world_.random_bytes.size() - size);
    e.trajectory_bytes = world_.random_bytes.substr(offset(rng_), size);
    {
      std::lock_guard lock(world_.tokens_mutex);
      world_.episode_tokens[e.episode_id.value()] = tokens_;
    }
    if (!resubmitting_) ++world_.submitted;  // an episode counts once, however often it is sent
    const auto t0 = Clock::now();
    Expected<SubmitReply> reply = worker_.coordinator->submit(std::move(s));
    const double ms = ms_since(t0);
    auto self = shared_from_this();
    if (!reply || reply->status == SubmitStatus::kStoreFailed) {
      if (world_.stopping) return;
      world_.fail("submission of " + assignment_.episode_id.value() + ": " +
                  (reply ? reply->message : reply.error().to_string()));
      resubmitting_ = true;
      loop_.after_ms(1000, [self] { self->submit(); });
      return;
    }
    resubmitting_ = false;
    world_.store_ack.add(ms);
    if (reply->status == SubmitStatus::kAcknowledged) ++world_.acknowledged;
    loop_.after_ms(0, [self] { self->ask(); });
  }

  World& world_;
  EventLoop& loop_;
  RolloutWorker& worker_;
  std::mt19937_64 rng_;
  Assignment assignment_;
  std::int64_t turns_left_ = 0, turns_ = 0, tokens_ = 0;
  bool resubmitting_ = false;
  std::int64_t index_ = 0;  // among the worker's slots
};

}  // namespace

void start_slot(World& world, EventLoop& loop, RolloutWorker& worker, std::uint64_t seed,
                double delay_ms) {
  auto slot = std::make_shared<Slot>(world, loop, worker, seed);
  loop.after_ms(delay_ms, [slot] { slot->ask(); });
}

Expected<StepDone> SimLearner::train(const TrainStep& step) {
  const auto t0 = Clock::now();
  std::int64_t tokens = 0;
  {
    std::lock_guard lock(world_.tokens_mutex);
    auto add = [&](const std::vector<EpisodeId>& ids) {
      for (const EpisodeId& id : ids) {
        auto it = world_.episode_tokens.find(id.value());
        if (it != world_.episode_tokens.end()) tokens += it->second;
      }
    };
    for (const RecordedStep& r : step.replay) add(r.episodes);
    add(step.episodes);
    for (const EpisodeId& id : step.episodes) world_.episode_tokens.erase(id.value());
  }
  const double ms =
      static_cast<double>(tokens) /
      (world_.options.latencies.learner_tokens_per_s * static_cast<double>(world_.learner_ranks)) *
      1000;
  world_.sleep_real(world_.scaled(ms));
  world_.learner_step.add(ms_since(t0));
  ++world_.steps;
  const std::uint64_t version = step.version.value() + 1;
  world_.latest_version = std::max<std::uint64_t>(world_.latest_version, version);
  return StepDone{.step = step.step,
                  .new_version = PolicyVersion{version},
                  .metrics = {{"sim/tokens", static_cast<double>(tokens)}}};
}

Expected<CheckpointDone> SimLearner::checkpoint(const CheckpointRequest& request) {
  const SimLatencies& l = world_.options.latencies;
  const double bytes = l.model_params * 14 / static_cast<double>(world_.learner_ranks);
  world_.sleep_real(world_.scaled(bytes / (l.checkpoint_mb_per_s * 1e6) * 1000));
  ++world_.checkpoints;
  return CheckpointDone{
      .step = request.step,
      .path = (world_.options.work_dir / "checkpoints" / ("step-" + std::to_string(request.step)))
                  .string(),
      .size_bytes = static_cast<std::uint64_t>(bytes),
      .checksum = "00"};
}

// What the simulated pool workers answer after their drawn latency.
PoolHandler sim_handler(World& world, bool bench, std::uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  auto mutex = std::make_shared<std::mutex>();
  return [&world, bench, rng, mutex](WorkItem& item) -> Expected<PoolBytes> {
    const SimLatencies& l = world.options.latencies;
    const std::string_view payload = item.payload.view();
    const double median = !bench                                    ? l.compile_ms
                          : (!payload.empty() && payload[0] == 'F') ? l.bench_final_ms
                                                                    : l.bench_ms;
    double ms = 0;
    {
      std::lock_guard lock(*mutex);
      ms = jittered(*rng, median, l.jitter_sigma);
    }
    world.sleep_real(world.scaled(ms));
    return PoolBytes(std::string(bench ? 2048 : 512, 'r'));
  };
}

}  // namespace cuda_agent::sim
