#include "gpu_bench/zygote_supervisor.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

namespace cuda_agent {
namespace fs = std::filesystem;

ZygoteSupervisor::ZygoteSupervisor(ZygoteSupervisorOptions options)
    : options_(std::move(options)) {}

ZygoteSupervisor::~ZygoteSupervisor() { stop(); }

void ZygoteSupervisor::stop() {
  zygote_.reset();  // before its directory goes
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
  dir_.clear();
}

void ZygoteSupervisor::start() {
  if (zygote_ || given_up_ || options_.zygote_script.empty()) return;
  stop();
  const fs::path dir =
      fs::path(options_.work_root) / (options_.dir_prefix + "-" + std::to_string(++dirs_));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir / "tmp", ec);
  Status handed = ec ? make_error(ErrorCategory::kIo, options_.error_code,
                                  "cannot create '" + dir.string() + "': " + ec.message())
                     : Status();
  if (handed && options_.box.run_as)
    handed = hand_job_dir(dir.string(), *options_.box.run_as, options_.error_code);
  if (!handed) {
    given_up_ = true;
    notes_.push_back("harness zygote: cannot make its directory (" + handed.error().message +
                     "); fresh children from now on");
    return;
  }
  dir_ = dir.string();
  HarnessZygoteOptions zo;
  zo.box = options_.box;
  zo.box.job_dir = dir_;
  zo.zygote_script = options_.zygote_script;
  zo.harness_script = options_.harness_script;
  zo.message_grace_ms = options_.message_grace_ms;
  auto z = HarnessZygote::start(zo);
  if (!z) return failed("cannot start: " + z.error().message);
  zygote_ = std::move(*z);
}

void ZygoteSupervisor::failed(std::string why) {
  stop();
  if (why.rfind("harness zygote", 0) != 0) why = "harness zygote: " + why;
  if (why.size() > 1200) why = why.substr(0, 600) + " ... " + why.substr(why.size() - 500);
  if (why.find("refused to serve") != std::string::npos || ++restarts_ > options_.max_restarts) {
    given_up_ = true;
    notes_.push_back(why + "; fresh children from now on");
    return;
  }
  notes_.push_back(why + "; restarted (" + std::to_string(restarts_) + " in a row)");
  start();
}

ZygoteRun ZygoteSupervisor::run(ZygoteJob job, std::chrono::steady_clock::time_point ready_by,
                                std::optional<std::chrono::steady_clock::time_point> job_deadline) {
  ZygoteRun out;
  start();
  if (!zygote_) return out;
  const auto asked = std::chrono::steady_clock::now();
  Status ready = zygote_->wait_ready(ready_by);
  out.wait_ready_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  if (!ready) {
    failed(ready.error().message);
    return out;
  }
  if (job_deadline)
    job.limits.wall_ms =
        std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(
                                      *job_deadline - std::chrono::steady_clock::now())
                                      .count());
  out.pid = zygote_->pid();
  Expected<SandboxResult> r = zygote_->run(job);
  if (!r) {
    // The outcome is unknown and the job may have changed its directory.
    failed(r.error().message + " (" + options_.rerun_note + ")");
    return out;
  }
  out.result = std::move(*r);
  if (zygote_->ready()) {
    restarts_ = 0;
  } else {  // it answered for the job (a timeout), then failed: replace it
    failed(zygote_->failure());
  }
  return out;
}

std::vector<std::string> ZygoteSupervisor::take_notes() { return std::exchange(notes_, {}); }

}  // namespace cuda_agent
