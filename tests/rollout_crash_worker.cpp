// Helper of tests/rollout_crash_test.cpp (built for the tests only): a rollout worker process
// over a real run store, with the replay backend and fake tools (rollout/rollout_test_fakes.h).
// It reports on stdout only what the store has acknowledged, so the parent knows exactly what the
// store promised to keep when it kills this process.
//
//   rollout_crash_worker STORE_DIR RUN_ID EPISODES CONCURRENCY MAX_ATTEMPTS [STALL_FROM]
//
// Episodes "e0".."e<EPISODES-1>", episode n replaying testing::fake_transcript(n). With
// STALL_FROM, episodes numbered STALL_FROM and up stop inside their compile until stdin closes
// (at most 120 s): they stay in flight until the parent kills the process.
//
// stdout, one line per event, each written once the store acknowledged it:
//   "ready"                        the store is open
//   "recovered <episode> <n>"      attempt n of a lost worker marked aborted
//   "started <episode> <n>"        attempt n's running marker is durable
//   "ack <episode> <n>"            the episode (attempt n) is durable
//   "skip <episode>" / "gave_up <episode>" / "failed <episode> <error>"
//   "done <acked> <skipped> <given_up> <failed>"
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/log.h"
#include "rollout/rollout_test_fakes.h"
#include "rollout/rollout_worker.h"

namespace {

using namespace cuda_agent;

void say(const std::string& line) {
  const std::string out = line + "\n";
  // One write() per line: atomic on a pipe (under PIPE_BUF), so threads never interleave.
  if (::write(STDOUT_FILENO, out.data(), out.size()) < 0) std::_Exit(4);
}

void wait_for_stdin_eof() {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  char c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (::poll(&p, 1, 1000) > 0 && ::read(STDIN_FILENO, &c, 1) <= 0) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: rollout_crash_worker STORE_DIR RUN_ID EPISODES CONCURRENCY MAX_ATTEMPTS "
                 "[STALL_FROM]\n");
    return 2;
  }
  (void)setup_logging({.level = "error"});
  const RunId run{argv[2]};
  const int episodes = std::atoi(argv[3]);
  const int stall_from = argc >= 7 ? std::atoi(argv[6]) : -1;
  auto opened = RunStore::open({.dir = argv[1]}, StoreMode::kWrite);
  if (!opened) {
    std::fprintf(stderr, "rollout_crash_worker: %s\n", opened.error().to_string().c_str());
    return 3;
  }
  say("ready");
  RunStoreRollout store(**opened);
  RolloutWorker worker(store, {.worker_id = WorkerId{"pid-" + std::to_string(::getpid())},
                               .concurrent_episodes = std::atoi(argv[4]),
                               .max_attempts = static_cast<std::uint32_t>(std::atoi(argv[5]))});
  auto recovered = worker.recover(run, worker.all_others_lost());
  if (!recovered) {
    std::fprintf(stderr, "rollout_crash_worker: %s\n", recovered.error().to_string().c_str());
    return 5;
  }
  for (const auto& a : recovered->aborted)
    say("recovered " + a.episode_id.value() + " " + std::to_string(a.attempt));

  std::vector<RolloutJob> jobs;
  for (int n = 0; n < episodes; ++n) {
    const bool stall = stall_from >= 0 && n >= stall_from;
    jobs.push_back(testing::fake_job(n, stall ? wait_for_stdin_eof : std::function<void()>{},
                                     /*evaluation=*/false));
  }
  RolloutHooks hooks{
      .on_started =
          [](const EpisodeAttemptRecord& a) {
            say("started " + a.episode_id.value() + " " + std::to_string(a.attempt));
          },
      .on_finished =
          [](const JobResult& r) {
            switch (r.outcome) {
              case JobOutcome::kAcknowledged:
                say("ack " + r.episode_id.value() + " " + std::to_string(r.attempt));
                break;
              case JobOutcome::kAlreadyStored: say("skip " + r.episode_id.value()); break;
              case JobOutcome::kGivenUp: say("gave_up " + r.episode_id.value()); break;
              default:
                say("failed " + r.episode_id.value() + " " +
                    (r.error ? r.error->to_string() : std::string(to_string(r.outcome))));
            }
          }};
  RolloutReport report = worker.run(run, jobs, hooks);
  const auto failed = report.jobs.size() - report.count(JobOutcome::kAcknowledged) -
                      report.count(JobOutcome::kAlreadyStored) - report.count(JobOutcome::kGivenUp);
  say("done " + std::to_string(report.count(JobOutcome::kAcknowledged)) + " " +
      std::to_string(report.count(JobOutcome::kAlreadyStored)) + " " +
      std::to_string(report.count(JobOutcome::kGivenUp)) + " " + std::to_string(failed));
  return failed == 0 ? 0 : 1;
}
