// sim_report_json, sim_report_text: see sim.h.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "cluster/sim.h"

namespace cuda_agent {
namespace {
nlohmann::json latency_json(const LatencySummary& s) {
  return {{"count", s.count}, {"p50_ms", s.p50_ms}, {"p99_ms", s.p99_ms}, {"max_ms", s.max_ms}};
}
}  // namespace

std::string sim_report_json(const SimReport& r) {
  nlohmann::json j = {{"work_dir", r.work_dir.string()},
                      {"real_s", r.real_s},
                      {"simulated_s", r.simulated_s},
                      {"speedup", r.speedup},
                      {"load", r.load},
                      {"rollout_workers", r.rollout_workers},
                      {"learner_ranks", r.learner_ranks},
                      {"compile_workers", r.compile_workers},
                      {"bench_workers", r.bench_workers},
                      {"compile_slots", r.compile_slots},
                      {"bench_slots", r.bench_slots},
                      {"episode_slots", r.episode_slots},
                      {"members", r.members},
                      {"in_flight_p50", r.in_flight_p50},
                      {"in_flight_max", r.in_flight_max},
                      {"episodes_submitted", r.episodes_submitted},
                      {"episodes_acknowledged", r.episodes_acknowledged},
                      {"episodes_trained", r.episodes_trained},
                      {"steps", r.steps},
                      {"checkpoints", r.checkpoints},
                      {"simulated_episodes_per_hour", r.simulated_episodes_per_hour},
                      {"dispatch", latency_json(r.dispatch)},
                      {"admission", latency_json(r.admission)},
                      {"store_ack", latency_json(r.store_ack)},
                      {"compile_call", latency_json(r.compile_call)},
                      {"bench_call", latency_json(r.bench_call)},
                      {"learner_step", latency_json(r.learner_step)},
                      {"event_lag", latency_json(r.event_lag)},
                      {"coordinator_cores", r.coordinator_cores},
                      {"compile_broker_cores", r.compile_broker_cores},
                      {"bench_broker_cores", r.bench_broker_cores},
                      {"sim_cores", r.sim_cores},
                      {"coordinator_rss_mb", r.coordinator_rss_mb},
                      {"compile_queue_max", r.compile_queue_max},
                      {"bench_queue_max", r.bench_queue_max},
                      {"compile_queue_last", r.compile_queue_last},
                      {"bench_queue_last", r.bench_queue_last},
                      {"false_suspects", r.false_suspects},
                      {"false_lost", r.false_lost},
                      {"broker_workers_lost", r.broker_workers_lost},
                      {"failed_calls", r.failed_calls},
                      {"failures", r.failures},
                      {"heartbeat_timeout_ms", r.heartbeat_timeout_ms},
                      {"probe_suspect_s", r.probe_suspect_s},
                      {"probe_lost_s", r.probe_lost_s},
                      {"child_exits", r.child_exits}};
  return j.dump(2);
}

std::string sim_report_text(const SimReport& r) {
  std::ostringstream o;
  char buf[512];
  auto lat = [&](const char* name, const LatencySummary& s) {
    std::snprintf(buf, sizeof buf,
                  "  %-28s %8llu calls, p50 %8.2f ms, p99 %8.2f ms, max %8.2f ms\n", name,
                  static_cast<unsigned long long>(s.count), s.p50_ms, s.p99_ms, s.max_ms);
    o << buf;
  };
  std::snprintf(buf, sizeof buf,
                "simulation: %.0f s real x speedup %.0f = %.0f s simulated (%.2f h), load %.1fx; "
                "work dir %s\n",
                r.real_s, r.speedup, r.simulated_s, r.simulated_s / 3600, r.load,
                r.work_dir.string().c_str());
  o << buf;
  std::snprintf(
      buf, sizeof buf,
      "  members %lld: %lld rollout workers (%lld episode slots), 1 learner (of %lld ranks), "
      "%lld compile workers (%lld slots), %lld bench workers\n",
      static_cast<long long>(r.members), static_cast<long long>(r.rollout_workers),
      static_cast<long long>(r.episode_slots), static_cast<long long>(r.learner_ranks),
      static_cast<long long>(r.compile_workers), static_cast<long long>(r.compile_slots),
      static_cast<long long>(r.bench_workers));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  episodes: in flight p50 %lld, max %lld; submitted %llu, acknowledged %llu, "
                "trained %llu (%.0f per simulated hour); learner steps %llu, checkpoints %llu\n",
                static_cast<long long>(r.in_flight_p50), static_cast<long long>(r.in_flight_max),
                static_cast<unsigned long long>(r.episodes_submitted),
                static_cast<unsigned long long>(r.episodes_acknowledged),
                static_cast<unsigned long long>(r.episodes_trained), r.simulated_episodes_per_hour,
                static_cast<unsigned long long>(r.steps),
                static_cast<unsigned long long>(r.checkpoints));
  o << buf;
  lat("dispatch (work assigned)", r.dispatch);
  lat("admission (none now)", r.admission);
  lat("store acknowledgement", r.store_ack);
  lat("compile call", r.compile_call);
  lat("bench call", r.bench_call);
  lat("learner step", r.learner_step);
  lat("simulation's event lag", r.event_lag);
  std::snprintf(buf, sizeof buf,
                "  CPU (cores, average over the real time): coordinator %.3f (peak RSS %llu MiB), "
                "compile broker %.3f, bench broker %.3f, this simulation %.3f\n",
                r.coordinator_cores, static_cast<unsigned long long>(r.coordinator_rss_mb),
                r.compile_broker_cores, r.bench_broker_cores, r.sim_cores);
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  queues: compile max %llu (last %llu), bench max %llu (last %llu)\n",
                static_cast<unsigned long long>(r.compile_queue_max),
                static_cast<unsigned long long>(r.compile_queue_last),
                static_cast<unsigned long long>(r.bench_queue_max),
                static_cast<unsigned long long>(r.bench_queue_last));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  false suspects %llu, false lost %llu, workers the brokers lost %llu; failed "
                "calls %llu\n",
                static_cast<unsigned long long>(r.false_suspects),
                static_cast<unsigned long long>(r.false_lost),
                static_cast<unsigned long long>(r.broker_workers_lost),
                static_cast<unsigned long long>(r.failed_calls));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  silent probe (heartbeat timeout %lld ms): suspect after %.2f s, lost after "
                "%.2f s (-1: not seen)\n",
                static_cast<long long>(r.heartbeat_timeout_ms), r.probe_suspect_s, r.probe_lost_s);
  o << buf;
  for (const std::string& f : r.failures) o << "  failure: " << f << "\n";
  for (const std::string& c : r.child_exits) o << "  child exited: " << c << "\n";
  return o.str();
}

}  // namespace cuda_agent
