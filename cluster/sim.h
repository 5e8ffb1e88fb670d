// The control-plane simulation (`cuda-agent sim`, issue 26): a run of a cluster manifest on one
// machine, with the real coordinator, the real compile-farm and bench-pool brokers and the real
// run store (child processes, exactly as `launch` starts them), and every other role simulated
// in this process behind the interfaces the real ones use:
//   rollout workers  one CoordinatorClient and one PoolClient per broker each, as many as the
//                    launch plan starts (x load), each running [rollout] concurrent_episodes
//                    episodes: ask for work, then per turn a decode wait and perhaps a compile or
//                    a bench call through the real broker, then submit the trajectory (real
//                    bytes of the episode's size) and ask again;
//   compile and bench workers  PoolWorkers with the plan's slots that answer after a drawn
//                    latency;
//   the learner      serve_learner: a step takes the batch's tokens over the ranks' measured
//                    throughput, a checkpoint the sharded optimizer state over the measured
//                    write rate; after a step each rollout worker's next decode waits a weight
//                    sync.
// Latencies are drawn from the figures measured on the GPU machine (SimLatencies says which);
// `speedup` divides every simulated latency, so simulated time runs that many times faster than
// the clock, while the protocol's own timers (heartbeats, retry hints, timeouts) stay real: a
// run at speedup k puts k times the episode traffic of the real cluster on the control plane.
// `load` multiplies the rollout workers (and so the concurrent episodes and members).
//
// Measured (SimReport): every work request's and submission's round trip at the client
// (dispatch when an episode was assigned, admission when the answer was "none now", store
// acknowledgement for a submission), the CPU of the coordinator and each broker from /proc, the
// episodes in flight and the brokers' queues once a second, suspect and lost lines in the
// coordinator's log and workers the brokers lost, and one probe member that falls silent after
// a warm-up: when the coordinator took it for suspect and for lost.
//
// Threading: run_simulation blocks until the duration is over or `stop` says so; it owns every
// thread and child it starts and ends them before it returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

/// The simulated roles' latencies. Defaults are figures measured on the GPU machine
/// (docs/BENCHMARKS.md, section named) where one exists, else a stated assumption.
struct SimLatencies {
  /// Decode, per generated token of one sequence: 9.4 ms ("Decode and prefill": the 0.5B shape's
  /// step on the H200 at batch 1..64; a larger policy decodes slower, which only lightens the
  /// control plane's load).
  double decode_ms_per_token = 9.4;
  /// New tokens per turn, uniform in [min, max] (capped by [rollout] max_new_tokens_per_turn).
  std::int64_t new_tokens_min = 128;
  std::int64_t new_tokens_max = 1024;
  /// Tokens a tool result adds to the context per turn (assumption).
  std::int64_t tool_tokens_per_turn = 200;
  /// The first prompt (as generate_bench's episode).
  std::int64_t prompt_tokens = 1024;
  /// Turns of a multi-turn episode: geometric with this mean, capped by [rollout] max_turns
  /// (assumption; single-turn episodes have one).
  double mean_turns = 30;
  /// Chance that a turn compiles, or benchmarks, through the brokers (assumption).
  double compile_per_turn = 0.5;
  double bench_per_turn = 0.2;
  /// A cold compile: 1.04 s ("Compile farm", GPU machine's CPU).
  double compile_ms = 1040;
  /// A benchmark with cached baselines: 1.53 s; the episode's last (final) one measures its
  /// baselines: 9.07 s ("GPU bench timing quality", zygote rows).
  double bench_ms = 1530;
  double bench_final_ms = 9070;
  /// Spread of every drawn latency: lognormal with this sigma around the figure.
  double jitter_sigma = 0.25;
  /// Learner tokens per second per rank: 59,522 ("Learner": the 0.5B shape, bf16, one H200).
  double learner_tokens_per_s = 59'522;
  /// Policy parameters (checkpoint and weight-sync sizes): the manifest's model is not read.
  double model_params = 32e9;
  /// Checkpoint write: 14 bytes per parameter (bf16 weights, fp32 master and two moments)
  /// sharded over the ranks, at 845 MB/s per rank ("Learner": learner_checkpoint_bench).
  double checkpoint_mb_per_s = 845;
  /// Weight sync to the engines: bf16 weights at this rate (assumption: no measured figure at
  /// this size).
  double weight_sync_gb_per_s = 50;
  /// Bytes a trajectory takes in the store per token (ids, log-probs, masks; assumption).
  double trajectory_bytes_per_token = 10;
};

struct SimOptions {
  /// The cluster manifest. Required.
  std::filesystem::path manifest;
  /// `--set SECTION.KEY=VALUE` edits applied first.
  std::vector<std::string> settings;
  /// Where the store, logs, tasks and the effective manifest go; empty: a fresh directory under
  /// the system's temporary directory. Must be empty or not exist.
  std::filesystem::path work_dir;
  /// Simulated time to run.
  std::chrono::seconds duration{600};
  /// Simulated seconds per real second (>= 1).
  double speedup = 1;
  /// Rollout workers of the plan times this (>= 1, rounded to whole workers).
  double load = 1;
  /// First of the 6 ports the run uses; 0: a free block.
  std::int64_t port_base = 0;
  /// Synthetic training tasks written for the coordinator.
  std::int64_t tasks = 32;
  std::uint64_t seed = 1;
  /// When the silent probe stops heartbeating (real time after the start); 0: no probe.
  std::chrono::seconds probe_after{20};
  SimLatencies latencies;
  /// The program the children run ("cuda-agent" = this executable, as LocalProcesses).
  std::string cuda_agent_exe;
  /// Polled about every 100 ms; true ends the simulation early (its report still comes back).
  std::function<bool()> stop;
  /// One line of progress about every 10 s (may be empty).
  std::function<void(const std::string&)> progress;
};

struct LatencySummary {
  std::uint64_t count = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
};

struct SimReport {
  std::filesystem::path work_dir;
  double real_s = 0;
  double simulated_s = 0;
  double speedup = 1;
  double load = 1;
  /// Members: the coordinator's (rollout workers, the learner; not the probe) and the brokers'
  /// workers.
  std::int64_t rollout_workers = 0, learner_ranks = 0, compile_workers = 0, bench_workers = 0;
  std::int64_t compile_slots = 0, bench_slots = 0;
  std::int64_t episode_slots = 0;  ///< concurrent episodes the rollout side runs
  std::int64_t members = 0;        ///< every heartbeating member of the coordinator and brokers
  /// Episodes in flight at the coordinator, sampled once a second.
  std::int64_t in_flight_p50 = 0, in_flight_max = 0;
  std::uint64_t episodes_submitted = 0, episodes_acknowledged = 0, episodes_trained = 0;
  std::uint64_t steps = 0, checkpoints = 0;
  double simulated_episodes_per_hour = 0;
  LatencySummary dispatch, admission, store_ack, compile_call, bench_call, learner_step;
  /// How late the simulation's event loop ran what fell due: large values mean the simulated
  /// roles, not the control plane, set the pace (the machine is too small for the load).
  LatencySummary event_lag;
  /// Cores used on average over the run (CPU seconds / real seconds), from /proc.
  double coordinator_cores = 0, compile_broker_cores = 0, bench_broker_cores = 0, sim_cores = 0;
  std::uint64_t coordinator_rss_mb = 0;
  /// The brokers' queues, sampled once a second.
  std::uint64_t compile_queue_max = 0, bench_queue_max = 0;
  std::uint64_t compile_queue_last = 0, bench_queue_last = 0;
  /// Members the coordinator called suspect or lost (the probe excluded), workers the brokers
  /// lost: with no fault injected, every one is false.
  std::uint64_t false_suspects = 0, false_lost = 0, broker_workers_lost = 0;
  /// Calls that failed (timeouts, refusals): each is named in failures (first 20).
  std::uint64_t failed_calls = 0;
  std::vector<std::string> failures;
  /// The silent probe: [run] heartbeat_timeout_ms, and seconds from its last heartbeat's latest
  /// possible time (when it stopped) to the coordinator's suspect and lost lines (< 0: not seen).
  std::int64_t heartbeat_timeout_ms = 0;
  double probe_suspect_s = -1, probe_lost_s = -1;
  /// Exits of the real children during the run ("name: code"); none is expected.
  std::vector<std::string> child_exits;
};

/// Runs the simulation. Errors: bad options, a manifest that does not load, a work directory that
/// is not empty, no free ports, a child that does not come up.
Expected<SimReport> run_simulation(const SimOptions& options);

/// The report as one JSON object (for --json and docs/BENCHMARKS.md).
std::string sim_report_json(const SimReport& report);
/// The report for people: what ran, then one line per figure.
std::string sim_report_text(const SimReport& report);

}  // namespace cuda_agent
