// The simulated roles of `cuda-agent sim` (cluster/sim.h): what they share (World), the event
// loop the rollout slots run on, a rollout worker's clients, the episode slot, the learner and the
// pool workers' handler. Internal to cluster/sim*.cpp.
//
// Threading: World is shared by every thread of the simulation (atomics and its own mutexes); the
// EventLoop's timer thread hands due tasks to its executors; a Slot runs on one executor (or a
// pool client's callback thread) at a time, since each of its steps schedules the next.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actors/pool_client.h"
#include "actors/pool_worker.h"
#include "cluster/manifest.h"
#include "cluster/sim.h"
#include "coordinator/coordinator_client.h"
#include "rollout/admission_turn.h"

namespace cuda_agent::sim {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Latencies of one kind; summarised at the end.
class Samples {
 public:
  void add(double ms) {
    std::lock_guard lock(mutex_);
    values_.push_back(ms);
  }
  LatencySummary summary() const {
    std::lock_guard lock(mutex_);
    LatencySummary s;
    if (values_.empty()) return s;
    std::vector<double> v = values_;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
    };
    s.count = v.size();
    s.p50_ms = at(0.5);
    s.p99_ms = at(0.99);
    s.max_ms = v.back();
    return s;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<double> values_;
};

// Everything the simulated roles share.
struct World {
  SimOptions options;
  Manifest manifest;
  RunId run;
  std::optional<CurveClientKeys> curve;
  std::int64_t learner_ranks = 1;
  std::atomic<bool> stopping{false};
  std::mutex stop_mutex;
  std::condition_variable stop_cv;

  Samples dispatch, admission, store_ack, compile_call, bench_call, learner_step;
  Samples lag;  // how late the event loop ran what fell due: the simulation keeping up
  std::atomic<std::uint64_t> submitted{0}, acknowledged{0}, failed_calls{0}, steps{0},
      checkpoints{0};
  std::atomic<std::uint64_t> latest_version{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  std::mutex tokens_mutex;
  std::unordered_map<std::string, std::int64_t> episode_tokens;
  std::string random_bytes;  // trajectories are slices of it: incompressible, like real ones

  // Sleeps `ms` of real time unless the simulation stops first.
  void sleep_real(double ms) {
    std::unique_lock lock(stop_mutex);
    stop_cv.wait_for(lock, std::chrono::duration<double, std::milli>(ms),
                     [&] { return stopping.load(); });
  }
  double scaled(double simulated_ms) const { return simulated_ms / options.speedup; }
  void fail(const std::string& what) {
    ++failed_calls;
    std::lock_guard lock(failures_mutex);
    if (failures.size() < 20) failures.push_back(what);
  }
};

// Timers and a few threads that run what falls due: the rollout side's event loop. Blocking
// coordinator calls run on the executors; pool calls complete on the pool clients' threads.
class EventLoop {
 public:
  using Task = std::function<void()>;
  EventLoop(World& world, int executors) : world_(world) {
    timer_ = std::thread([this] { timers(); });
    for (int i = 0; i < executors; ++i) executors_.emplace_back([this] { execute(); });
  }
  ~EventLoop() { stop(); }
  void at(Clock::time_point due, Task task) {
    {
      std::lock_guard lock(mutex_);
      due_.push(Due{due, next_++, std::move(task)});
    }
    timer_cv_.notify_one();
  }
  void after_ms(double ms, Task task) {
    at(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double, std::milli>(std::max(0.0, ms))),
       std::move(task));
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
    }
    timer_cv_.notify_all();
    work_cv_.notify_all();
    timer_.join();
    for (auto& t : executors_) t.join();
  }

 private:
  struct Due {
    Clock::time_point when;
    std::uint64_t order;
    Task task;
    bool operator>(const Due& o) const { return when != o.when ? when > o.when : order > o.order; }
  };
  void timers() {
    std::unique_lock lock(mutex_);
    while (!stopped_) {
      if (due_.empty()) {
        timer_cv_.wait(lock);
        continue;
      }
      const auto when = due_.top().when;
      if (Clock::now() < when) {
        timer_cv_.wait_until(lock, when);
        continue;
      }
      ready_.push_back(Ready{when, std::move(const_cast<Due&>(due_.top()).task)});
      due_.pop();
      work_cv_.notify_one();
    }
  }
  void execute() {
    std::unique_lock lock(mutex_);
    while (true) {
      work_cv_.wait(lock, [&] { return stopped_ || !ready_.empty(); });
      if (stopped_) return;
      Ready r = std::move(ready_.front());
      ready_.pop_front();
      lock.unlock();
      world_.lag.add(ms_since(r.due));
      if (!world_.stopping) r.task();
      lock.lock();
    }
  }

  World& world_;
  std::mutex mutex_;
  std::condition_variable timer_cv_, work_cv_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  struct Ready {
    Clock::time_point due;
    Task task;
  };
  std::deque<Ready> ready_;
  std::uint64_t next_ = 0;
  bool stopped_ = false;
  std::thread timer_;
  std::vector<std::thread> executors_;
};

// One simulated rollout worker: its clients, and a version it has synced its engine to.
struct RolloutWorker {
  WorkerId id;
  std::unique_ptr<CoordinatorClient> coordinator;
  std::unique_ptr<PoolClient> compile, bench;
  std::mutex mutex;  // guards what follows
  std::uint64_t synced_version = 0;
  Clock::time_point sync_until{};
  /// As the real loop: one slot polls while admission is closed (rollout/admission_turn.h); the
  /// others wait here and ask once its assignment opens admission.
  AdmissionTurn turn;
  std::vector<std::function<void()>> waiting;
  std::int64_t slots = 0;  // slot indices handed out
};

/// Starts one episode slot of `worker` after `delay_ms`: it asks for work, runs the episode's
/// turns, submits and asks again until the simulation stops or the run is finished.
void start_slot(World& world, EventLoop& loop, RolloutWorker& worker, std::uint64_t seed,
                double delay_ms);

// The simulated learner: a step takes its batch's tokens over the ranks' throughput, a checkpoint
// the sharded optimizer state over the write rate (both divided by the speedup).
class SimLearner : public LearnerHandler {
 public:
  explicit SimLearner(World& world) : world_(world) {}
  Expected<StepDone> train(const TrainStep& step) override;
  Expected<CheckpointDone> checkpoint(const CheckpointRequest& request) override;

 private:
  World& world_;
};

/// What a simulated compile (bench = false) or bench worker answers, after its drawn latency.
PoolHandler sim_handler(World& world, bool bench, std::uint64_t seed);

}  // namespace cuda_agent::sim
