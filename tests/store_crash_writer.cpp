// Helper of tests/store_crash_test.cpp and tests/store_cli_test.cpp (built for the tests only):
// writes episodes to a run store and reports each one on stdout only after its write was
// acknowledged, so the parent knows exactly which records the store promised to keep.
//
//   store_crash_writer STORE_DIR RUN_ID [--hold N]
//
// stdout lines: "ready" once the store is open, then "ack <episode id> ..." per acknowledged
// write. Episode ids are "<n>" counting from 0; every field and the trajectory bytes derive from
// the id (crash_record.h), so the parent can check a record is intact without having seen it.
// Without --hold it writes until killed. With --hold N it writes N episodes, prints "held", keeps
// the store open (holding its lock) until stdin closes, then exits 0.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "storage/run_store.h"
#include "tests/store_crash_record.h"

namespace {

void say(const std::string& line) {
  const std::string out = line + "\n";
  // One write() per line: atomic on a pipe (under PIPE_BUF), so threads never interleave.
  if (::write(STDOUT_FILENO, out.data(), out.size()) < 0) std::_Exit(4);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cuda_agent;
  if (argc < 3) {
    std::fprintf(stderr, "usage: store_crash_writer STORE_DIR RUN_ID [--hold N]\n");
    return 2;
  }
  StoreOptions options;
  options.dir = argv[1];
  const std::string run = argv[2];
  const long hold = argc >= 5 && std::strcmp(argv[3], "--hold") == 0 ? std::atol(argv[4]) : -1;
  auto opened = RunStore::open(options, StoreMode::kWrite);
  if (!opened) {
    std::fprintf(stderr, "store_crash_writer: %s\n", opened.error().to_string().c_str());
    return 3;
  }
  RunStore& store = **opened;
  say("ready");

  std::atomic<long> next{0};
  auto appender = [&](unsigned lane) {
    for (unsigned round = 0;; ++round) {
      const int n = 1 + static_cast<int>((lane + round) % 3);  // 1 to 3 records per write
      StoreWrite w;
      std::string line = "ack";
      for (int i = 0; i < n; ++i) {
        const long id = next++;
        if (hold >= 0 && id >= hold) break;
        w.episodes.push_back(crash_record::make(run, id));
        line += " " + std::to_string(id);
      }
      if (w.episodes.empty()) return;
      Status s = store.write(std::move(w), std::chrono::seconds(60));
      if (!s) {
        std::fprintf(stderr, "store_crash_writer: %s\n", s.error().to_string().c_str());
        std::_Exit(5);
      }
      say(line);
    }
  };
  std::vector<std::thread> lanes;
  for (unsigned lane = 0; lane < 3; ++lane) lanes.emplace_back(appender, lane);
  for (auto& t : lanes) t.join();  // only with --hold: otherwise it writes until killed
  say("held");
  char c;
  while (::read(STDIN_FILENO, &c, 1) > 0) {
  }
  return 0;
}
