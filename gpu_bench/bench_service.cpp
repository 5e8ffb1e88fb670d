#include "gpu_bench/bench_service.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/clock.h"
#include "core/content_hash.h"
#include "core/sandbox.h"
#include "gpu_bench/device_probe.h"
#include "gpu_bench/harness_sandbox.h"
#include "gpu_bench/nsight_compute.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;

Error bench_error(ErrorCategory c, std::string code, std::string message) {
  return make_error(c, std::move(code), std::move(message));
}

Status write_file(const fs::path& p, std::string_view bytes, mode_t mode) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return bench_error(ErrorCategory::kIo, "bench.job", "cannot write '" + p.string() + "'");
  ::chmod(p.c_str(), mode);
  return Status();
}

// Files of the job directory after the candidate ran there (result.json, ncu.csv): the candidate
// could have replaced them with a link to a host file or a fifo, so they are read as untrusted.
Expected<std::string> read_file(const fs::path& p) {
  Expected<std::string> text = read_untrusted_file(p.string());
  if (!text && text.error().code == "sandbox.no_file")
    return bench_error(ErrorCategory::kNotFound, "bench.no_result", p.string());
  return text;
}

std::string tail(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

/// TF32 for this job: the request's or the service's setting (the same for every contender).
bool allow_tf32(const BenchOptions& b, const BenchJob& job) {
  return job.request.options.allow_tf32 || b.allow_tf32;
}

HarnessOptions harness_options(const BenchOptions& b, const BenchJob& job,
                               const std::optional<CachedBaseline>& baseline) {
  HarnessOptions o;
  const BenchRunOptions& x = job.request.options;
  o.tolerance_profile = x.tolerance_profile.empty() ? b.tolerance_profile : x.tolerance_profile;
  // Final evaluations (remeasure_baselines) always get the full set of input sets.
  const std::int64_t sets = !x.remeasure_baselines && b.nonfinal_verify_input_sets > 0
                                ? b.nonfinal_verify_input_sets
                                : b.verify_input_sets;
  o.verify_input_sets = x.verify_input_sets ? x.verify_input_sets : sets;
  o.warmup_trials = x.warmup_trials ? x.warmup_trials : b.warmup_trials;
  o.timed_trials = x.timed_trials ? x.timed_trials : b.timed_trials;
  o.input_sets = x.input_sets ? x.input_sets : b.input_sets;
  o.checked_trial_fraction =
      x.checked_trial_fraction > 0 ? x.checked_trial_fraction : b.checked_trial_fraction;
  o.allow_tf32 = allow_tf32(b, job);
  o.implausible_speedup = b.implausible_speedup;
  o.measure_eager = !baseline || baseline->eager_us <= 0;
  o.measure_compile = !baseline || baseline->compile_us <= 0;
  o.rss_limit_bytes = b.harness_memory_bytes;
  return o;
}

}  // namespace

void score_evaluation(BenchEvaluation& e, const RewardRule& rule,
                      const std::optional<CachedBaseline>& cached) {
  BenchResult& r = e.result;
  bool passed = e.harness.ok && e.harness.passed && !r.checks.empty();
  for (const auto& c : r.checks) passed = passed && c.passed;
  for (const auto& v : r.violations) passed = passed && !violation_fails(v);
  e.passed = passed;
  const double cand = median_of(r.candidate_trial_us);
  double eager = median_of(r.eager_trial_us);
  double compiled = median_of(r.compile_trial_us);
  if (eager <= 0 && cached) eager = cached->eager_us;
  if (compiled <= 0 && cached) compiled = cached->compile_us;
  r.speedup_vs_eager = cand > 0 && eager > 0 ? eager / cand : 0;
  r.speedup_vs_compile = cand > 0 && compiled > 0 ? compiled / cand : 0;
  r.reward = compute_reward({.passed = passed,
                             // no speed credit where a stored answer would pass (reward.h)
                             .timed = cand > 0 && !denies_speed_credit(r.violations),
                             .speedup_vs_eager = r.speedup_vs_eager,
                             .speedup_vs_compile = r.speedup_vs_compile},
                            rule);
}

Expected<std::unique_ptr<BenchService>> BenchService::create(BenchServiceOptions options) {
  ASSIGN_OR_RETURN(std::string python, find_python(options.bench.python));
  ASSIGN_OR_RETURN(std::string harness, find_harness_script(options.harness_dir, "harness.py"));
  if (options.work_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options.work_root =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/cuda-agent-bench-" + std::to_string(::getpid());
  }
  std::error_code ec;
  fs::create_directories(options.work_root, ec);
  if (ec)
    return bench_error(ErrorCategory::kIo, "bench.job",
                       "cannot create '" + options.work_root + "': " + ec.message());
  ::chmod(options.work_root.c_str(), 0711);
  if (!options.health_check) {
    const int device = options.device;
    const auto deadline = std::chrono::milliseconds(options.health_check_ms);
    options.health_check = [device, deadline] { return health_check(device, deadline); };
  }
  // zygote.py beside the harness, else the default places (a test's fake harness has none).
  std::string zygote;
  if (options.bench.harness_zygote) {
    auto z = find_harness_script(fs::path(harness).parent_path().string(), "zygote.py");
    if (!z) z = find_harness_script("", "zygote.py");
    if (z) zygote = *z;
  }
  auto service = std::unique_ptr<BenchService>(
      new BenchService(std::move(options), std::move(python), std::move(harness)));
  BenchService& b = *service;
  b.zygote_ = std::make_unique<ZygoteSupervisor>(
      ZygoteSupervisorOptions{.box = {.python = b.python_,
                                      .visible_device = b.visible_device_,
                                      .run_as = b.run_as_,
                                      .isolate_network = b.options_.isolate_network},
                              .work_root = b.options_.work_root,
                              .zygote_script = zygote,
                              .harness_script = b.harness_path_,
                              .message_grace_ms = b.options_.zygote_message_grace_ms,
                              .max_restarts = b.options_.zygote_max_restarts,
                              .rerun_note = "the job was re-run in a fresh harness child",
                              .error_code = "bench.job"});
  if (b.options_.bench.harness_zygote && zygote.empty())
    b.zygote_->note("harness zygote: zygote.py not found; fresh children");
  b.ncu_ = find_nsight_compute(b.options_.bench.nsight_compute);
  b.zygote_->start();  // imports torch while the caller gets ready
  return service;
}

BenchService::BenchService(BenchServiceOptions options, std::string python,
                           std::string harness_path)
    : options_(std::move(options)),
      python_(std::move(python)),
      harness_path_(std::move(harness_path)) {
  // The child sees exactly this GPU. A UUID names it whatever this process's own
  // CUDA_VISIBLE_DEVICES is; without a driver (tests with a fake harness) the index stands in.
  visible_device_ = visible_device_for(options_.device);
  // None when not root, or on a node whose Python (torch) an unprivileged uid cannot read
  // (CUDA_AGENT_BENCH_KEEP_UID=1, see bench_service.h).
  run_as_ = harness_run_as(options_.run_as_base, options_.device);
}

BenchService::~BenchService() {
  zygote_.reset();  // before its directory goes
  if (!options_.keep_jobs) {
    std::error_code ec;
    fs::remove_all(options_.work_root, ec);
  }
}

bool BenchService::zygote_enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return zygote_->process() != nullptr;
}

std::string BenchService::zygote_info() const {
  std::lock_guard<std::mutex> lock(mu_);
  const HarnessZygote* z = zygote_->process();
  return z && z->ready() ? z->ready_info() : std::string();
}

bool BenchService::healthy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return healthy_;
}

Status BenchService::ensure_healthy() {
  if (healthy_) return Status();
  Status s = options_.health_check();
  if (!s)
    return bench_error(ErrorCategory::kUnavailable, "bench.gpu_unhealthy",
                       "GPU " + std::to_string(options_.device) +
                           " failed its health check after a fault: " + s.error().message);
  healthy_ = true;
  return Status();
}

Expected<BenchEvaluation> BenchService::evaluate(const BenchJob& job) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(ensure_healthy());
  if (job.request.mode == BenchMode::kUnknown)
    return bench_error(ErrorCategory::kInvalidInput, "bench.request", "unknown bench mode");
  if (!job.request.payload)
    return bench_error(ErrorCategory::kInvalidInput, "bench.request",
                       "the request carries no payload (task model.py and built solution); this "
                       "worker does not look artifacts up in a run store");
  if (!job.request.task.content_hash.empty() &&
      job.request.task.content_hash != content_hash(job.request.payload->task_model_py))
    return bench_error(
        ErrorCategory::kInvalidInput, "bench.task_hash",
        "model.py does not hash to the task's content hash " + job.request.task.content_hash);
  // The audit names the artifact by the request's hash: the bytes that run must be those.
  if (const std::string ran = content_hash(job.request.payload->shared_object);
      ran != job.request.artifact.hash)
    return bench_error(ErrorCategory::kInvalidInput, "bench.artifact_hash",
                       "the built shared object hashes to " + ran +
                           ", not to the request's artifact hash '" + job.request.artifact.hash +
                           "'");
  const std::uint64_t seq = ++jobs_;
  // Made (and, for a re-run, made again) by write_job_dir; removed here at the end.
  const fs::path dir = fs::path(options_.work_root) / ("job-" + std::to_string(seq));
  // The baselines of a task this service has measured before, unless told otherwise.
  std::optional<CachedBaseline> baseline = job.baseline;
  const std::string memo_key = content_hash(job.request.payload->task_model_py) +
                               (allow_tf32(options_.bench, job) ? "|tf32" : "|ieee");
  // A final evaluation re-times both unless this worker is told to reuse them there too
  // ([bench] final_reuses_baselines); its report then says the baselines came from the cache.
  const bool may_reuse =
      !job.request.options.remeasure_baselines || options_.bench.final_reuses_baselines;
  if (!baseline && may_reuse && job.request.mode == BenchMode::kBenchmark) {
    if (auto it = baseline_memo_.find(memo_key); it != baseline_memo_.end()) {
      CachedBaseline reuse{
          .eager_us = options_.reuse_eager_baseline ? it->second.eager_us : 0,
          .compile_us = options_.reuse_compile_baseline ? it->second.compile_us : 0};
      if (reuse.eager_us > 0 || reuse.compile_us > 0) baseline = reuse;
    }
  }
  Expected<BenchEvaluation> out = run_job(job, baseline, dir.string());
  if (out && out->passed && job.request.mode == BenchMode::kProfile)
    add_nsight_compute(job, baseline, dir.string() + "-ncu", *out);
  if (out && baseline && !job.baseline) {
    auto note = [&](const char* which, double us) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "%s baseline: %.2f us, this worker's earlier measurement of the same task "
                    "(final evaluations re-measure)",
                    which, us);
      out->harness.notes.push_back(text);
    };
    if (out->result.eager_trial_us.empty() && baseline->eager_us > 0)
      note("eager", baseline->eager_us);
    if (out->result.compile_trial_us.empty() && baseline->compile_us > 0)
      note("torch.compile", baseline->compile_us);
  }
  if (out && out->passed) {  // medians timed beside a candidate that passed every check
    CachedBaseline& memo = baseline_memo_[memo_key];
    if (const double eager = median_of(out->result.eager_trial_us); eager > 0)
      memo.eager_us = eager;
    if (const double compiled = median_of(out->result.compile_trial_us); compiled > 0)
      memo.compile_us = compiled;
  }
  std::error_code ec;
  if (!options_.keep_jobs) fs::remove_all(dir, ec);
  // A hang, a crash or a CUDA fault may have left the GPU unusable: check before more work.
  const bool suspect =
      (!out && (out.error().code == "bench.timeout" || out.error().code == "bench.crashed")) ||
      (out && out->harness.device_fault);
  if (suspect) {
    healthy_ = false;
    (void)ensure_healthy();
  }
  return out;
}

Status BenchService::write_job_dir(const BenchJob& job,
                                   const std::optional<CachedBaseline>& baseline,
                                   const std::string& dir_str, bool ncu_region) {
  const fs::path dir(dir_str);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir / "tmp", ec);
  if (ec)
    return bench_error(ErrorCategory::kIo, "bench.job",
                       "cannot create '" + dir.string() + "': " + ec.message());
  HarnessRequest req;
  req.mode = job.request.mode;
  req.task_model_py = (dir / "model.py").string();
  req.model_new_py = (dir / "model_new.py").string();
  req.library = (dir / "solution.so").string();
  req.prototypes = job.request.payload->prototypes;
  req.device = 0;  // CUDA_VISIBLE_DEVICES leaves the child exactly one
  req.seeds = job.request.seeds;
  req.options = harness_options(options_.bench, job, baseline);
  if (ncu_region) {  // a profiling run, not a verdict: the first run checked everything
    req.options.ncu_region = true;
    req.options.poison_memory = false;  // and leaves ncu's replay device memory to save into
    req.options.verify_input_sets = 1;
  }
  RETURN_IF_ERROR(write_file(req.task_model_py, job.request.payload->task_model_py, 0644));
  RETURN_IF_ERROR(write_file(req.model_new_py, job.request.payload->model_new_py, 0644));
  RETURN_IF_ERROR(write_file(req.library, job.request.payload->shared_object, 0755));
  RETURN_IF_ERROR(write_file(dir / "request.json", harness_request_json(req), 0644));
  if (run_as_) RETURN_IF_ERROR(hand_job_dir(dir.string(), *run_as_, "bench.job"));
  return Status();
}

std::vector<std::string> BenchService::job_args(const std::string& dir) {
  return {"--request", (fs::path(dir) / "request.json").string(), "--result",
          (fs::path(dir) / "result.json").string()};
}

SandboxSpec BenchService::harness_spec(const std::string& dir, std::int64_t wall_ms) const {
  std::vector<std::string> args = {harness_path_};
  for (std::string& a : job_args(dir)) args.push_back(std::move(a));
  return harness_sandbox_spec({.python = python_,
                               .job_dir = dir,
                               .visible_device = visible_device_,
                               .run_as = run_as_,
                               .isolate_network = options_.isolate_network,
                               .wall_ms = wall_ms},
                              args);
}

Expected<BenchEvaluation> BenchService::run_job(const BenchJob& job,
                                                const std::optional<CachedBaseline>& baseline,
                                                const std::string& dir_str) {
  const fs::path dir(dir_str);
  RETURN_IF_ERROR(write_job_dir(job, baseline, dir_str));
  const fs::path result_path = dir / "result.json";
  const auto start = std::chrono::steady_clock::now();
  std::int64_t wall_ms = options_.bench.harness_wall_ms;
  if (job.request.header.deadline_unix_ms > 0) {
    const std::int64_t left = job.request.header.deadline_unix_ms - now_unix_ms();
    if (left <= 0)
      return bench_error(ErrorCategory::kTimeout, "bench.deadline",
                         "the request's deadline passed before the harness started");
    wall_ms = std::min(wall_ms, left);
  }
  const auto deadline = start + std::chrono::milliseconds(wall_ms);
  const std::vector<std::string> harness_args = job_args(dir.string());
  SandboxSpec spec = harness_spec(dir.string(), wall_ms);
  std::vector<std::string> notes;
  const auto ready_by =
      std::min(deadline, start + std::chrono::milliseconds(options_.zygote_ready_ms));
  ZygoteRun zr = zygote_->run(
      {.argv = harness_args, .env = spec.env, .dir = dir.string(), .limits = spec.limits}, ready_by,
      deadline);
  std::optional<SandboxResult> ran = std::move(zr.result);
  const bool from_zygote = ran.has_value();
  const pid_t zygote_pid = zr.pid;
  // Handed over and lost: the job may have changed its directory; write it again from scratch.
  if (!ran && zr.pid != 0) RETURN_IF_ERROR(write_job_dir(job, baseline, dir_str));
  for (auto& n : zygote_->take_notes()) notes.push_back(std::move(n));
  if (!ran) {
    // A fresh child gets what is left of the job's wall time; after a zygote failure during the
    // job, a job without a deadline of its own gets the whole harness_wall_ms again, so that a
    // zygote lost late in a job does not cost that job its verdict.
    std::int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
    if (zygote_pid != 0)
      left = job.request.header.deadline_unix_ms > 0
                 ? std::min(options_.bench.harness_wall_ms,
                            job.request.header.deadline_unix_ms - now_unix_ms())
                 : options_.bench.harness_wall_ms;
    if (left <= 0)
      return bench_error(ErrorCategory::kTimeout, "bench.deadline",
                         "the request's deadline passed before the harness started");
    spec.limits.wall_ms = left;
    spec.limits.cpu_seconds = 4 * left / 1000 + 120;
    ASSIGN_OR_RETURN(SandboxResult sr, run_sandboxed(spec));
    ran = std::move(sr);
  }
  const SandboxResult& sr = *ran;
  BenchEvaluation e;
  e.harness_output = tail(sr.output, 8000);
  e.from_zygote = from_zygote;
  e.sandbox =
      std::string(run_as_ ? "uid " + std::to_string(run_as_->uid) : "caller's uid") +
      (sr.network_isolated ? ", no network" : ", network not isolated") + ", wall limit " +
      std::to_string(wall_ms) + " ms" +
      (from_zygote ? ", forked from the harness zygote (pid " + std::to_string(zygote_pid) + ")"
                   : ", fresh python");
  const std::string where = " (harness output: " + tail(sr.output, 1500) + ")";
  switch (sr.outcome) {
    case SandboxOutcome::kWallTimeout:
      return bench_error(ErrorCategory::kTimeout, "bench.timeout",
                         "the harness passed its " + std::to_string(wall_ms) +
                             " ms deadline and was killed: a hung kernel or task" + where);
    case SandboxOutcome::kSignalled:
      return bench_error(ErrorCategory::kInvalidInput, "bench.crashed",
                         "the harness died by signal " + std::to_string(sr.signal) + where);
    case SandboxOutcome::kCpuLimit:
      return bench_error(ErrorCategory::kInvalidInput, "bench.cpu_limit",
                         "the harness passed its CPU-time limit" + where);
    case SandboxOutcome::kOutputLimit:
      return bench_error(ErrorCategory::kInvalidInput, "bench.output_limit",
                         "the harness's output passed its limit" + where);
    case SandboxOutcome::kFileLimit:
      return bench_error(ErrorCategory::kInvalidInput, "bench.file_limit",
                         "the harness wrote a file past its limit" + where);
    case SandboxOutcome::kExited: break;
  }
  auto text = read_file(result_path);
  if (!text)
    return bench_error(ErrorCategory::kInternal, "bench.no_result",
                       "the harness exited with code " + std::to_string(sr.exit_code) +
                           " and wrote no result" + where);
  ASSIGN_OR_RETURN(HarnessResult parsed, parse_harness_result(*text));
  if (!parsed.ok) return parsed.error->with_context("harness");
  e.harness = std::move(parsed);
  for (auto& n : notes) e.harness.notes.push_back(std::move(n));
  e.result = std::move(e.harness.result);
  e.harness.result = BenchResult{};
  e.result.harness_seconds = sr.wall_seconds;
  AuditRecord& a = e.result.audit;
  a.task_hash = content_hash(job.request.payload->task_model_py);
  a.artifact_hash = job.request.artifact.hash;
  a.toolchain = job.request.payload->toolchain;
  a.worker_id = options_.worker_id;
  a.measured_unix_ms = now_unix_ms();
  score_evaluation(e, RewardRule{options_.bench.faster_threshold, options_.bench.reward}, baseline);
  return e;
}

void BenchService::add_nsight_compute(const BenchJob& job,
                                      const std::optional<CachedBaseline>& baseline,
                                      const std::string& dir_str, BenchEvaluation& e) {
  constexpr std::size_t kReportLines = 40;  // the whole profile report, for the agent
  std::string& report = e.result.profile_report;
  auto unavailable = [&](const std::string& why) {
    report = "Nsight Compute: unavailable (" + why +
             "); kernel times below are the PyTorch profiler's\n" + report;
    e.harness.notes.push_back("Nsight Compute: " + why);
  };
  if (ncu_.empty()) {
    if (options_.bench.nsight_compute != "off")
      unavailable(options_.bench.nsight_compute == "auto"
                      ? "no ncu on PATH or in /usr/local/cuda/bin"
                      : "'" + options_.bench.nsight_compute + "' is not executable");
    return;
  }
  std::int64_t wall_ms = options_.bench.harness_wall_ms;
  if (job.request.header.deadline_unix_ms > 0)
    wall_ms = std::min(wall_ms, job.request.header.deadline_unix_ms - now_unix_ms());
  if (wall_ms < 1000) return unavailable("no time left before the request's deadline");
  const fs::path dir(dir_str);
  if (Status w = write_job_dir(job, baseline, dir_str, true); !w)
    return unavailable(w.error().message);
  const fs::path log = dir / "ncu.csv";
  SandboxSpec spec = harness_spec(dir.string(), wall_ms);
  std::vector<std::string> argv = nsight_compute_argv(ncu_, log.string());
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  spec.argv = std::move(argv);
  Expected<SandboxResult> ran = run_sandboxed(spec);
  auto log_text = read_file(log);
  const std::string text = log_text ? *log_text : "";
  // The profiled run's own result: it says how many calls ran inside the region.
  std::int64_t calls = 0;
  if (auto result_text = read_file(dir / "result.json")) {
    if (auto r = parse_harness_result(*result_text); r && r->ok)
      std::sscanf(r->result.profile_report.c_str(), "ncu region: %" SCNd64, &calls);
  }
  std::error_code ec;
  if (!options_.keep_jobs) fs::remove_all(dir, ec);
  if (!ran) return unavailable(ran.error().message);
  if (ran->outcome != SandboxOutcome::kExited)
    return unavailable("the profiled run ended: " + std::string(to_string(ran->outcome)));
  auto kernels = parse_nsight_compute_csv(text);
  if (!kernels || kernels->empty()) {
    std::string why = nsight_compute_failure(text + "\n" + ran->output);
    if (why.empty()) why = kernels ? "no kernel was profiled" : kernels.error().message;
    return unavailable(why + " (exit code " + std::to_string(ran->exit_code) + ")");
  }
  if (calls <= 0) return unavailable("the profiled run did not reach its calls");
  std::string table = render_nsight_compute(*kernels, calls, kReportLines / 2);
  // The PyTorch profiler's table after it, cut so that the whole stays within the line budget.
  const auto table_lines = static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n'));
  std::string rest;
  std::size_t lines = table_lines, pos = 0;
  while (lines < kReportLines && pos < report.size()) {
    std::size_t nl = report.find('\n', pos);
    if (nl == std::string::npos) nl = report.size();
    rest += report.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
    ++lines;
  }
  report = table + rest;
}

}  // namespace cuda_agent
