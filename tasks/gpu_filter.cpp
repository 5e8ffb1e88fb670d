// Runs filter_task.py children and reads their answers (see gpu_filter.h).
#include "tasks/gpu_filter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "core/clock.h"
#include "gpu_bench/device_probe.h"
#include "gpu_bench/harness_sandbox.h"
#include "gpu_bench/zygote_supervisor.h"

namespace cuda_agent {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kFilterVersion = 1;
constexpr const char* kSummary = "gpu_filter";

Error filter_error(ErrorCategory c, std::string code, std::string message) {
  return make_error(c, std::move(code), std::move(message));
}

Status write_file(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return filter_error(ErrorCategory::kIo, "filter.job", "cannot write '" + p.string() + "'");
  ::chmod(p.c_str(), 0644);
  return Status();
}

std::string tail(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

std::string summary_details(const std::string& key, const std::string& hash, double eager_ms,
                            double compile_ms, const std::string& failed, const json& extra) {
  json d = {{"options_key", key},
            {"content_hash", hash},
            {"eager_ms", eager_ms},
            {"compile_ms", compile_ms},
            {"failed_filter", failed}};
  if (extra.is_object()) d.update(extra);
  return d.dump();
}

void add_summary(GpuFilterOutcome& o, const std::string& key, const std::string& hash,
                 std::int64_t now, const json& extra) {
  o.results.push_back({.filter = kSummary,
                       .passed = o.passed,
                       .reason = o.passed ? "" : o.failed_filter + ": " + o.reason,
                       .unix_ms = now,
                       .details_json = summary_details(key, hash, o.eager_ms, o.compile_ms,
                                                       o.failed_filter, extra)});
}

// The summary row's details take the outcome's path: forked, the phases (with zygote_wait), the
// zygote's note.
void note_path(GpuFilterOutcome& o) {
  for (FilterResult& r : o.results) {
    if (r.filter != kSummary) continue;
    json d = json::parse(r.details_json, nullptr, false);
    if (!d.is_object()) d = json::object();
    d["forked"] = o.forked;
    if (!o.phases_s.empty()) d["phases_s"] = o.phases_s;
    if (!o.zygote_note.empty()) d["zygote_note"] = o.zygote_note;
    r.details_json = d.dump();
  }
}

std::int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16" || dtype == "half") return 2;
  if (dtype == "float64" || dtype == "int64" || dtype == "double" || dtype == "long" ||
      dtype == "complex64")
    return 8;
  if (dtype == "uint8" || dtype == "int8" || dtype == "bool") return 1;
  return 4;
}

}  // namespace

Expected<GpuFilterOutcome> parse_filter_result(std::string_view text, const std::string& key,
                                               const std::string& content_hash,
                                               std::int64_t now_unix_ms) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("format", "") != "cuda-agent-filter-result" || !j.contains("ok") ||
      !j["ok"].is_boolean() || !j.contains("checks") || !j["checks"].is_array())
    return filter_error(
        ErrorCategory::kInternal, "filter.result",
        "the filter wrote something that is not a result: " + std::string(text.substr(0, 300)));
  GpuFilterOutcome o;
  o.wall_s = j.value("wall_s", 0.0);
  if (j.contains("peak_gpu_bytes") && j["peak_gpu_bytes"].is_number_integer())
    o.peak_gpu_bytes = j["peak_gpu_bytes"].get<std::int64_t>();
  if (!j["ok"].get<bool>()) {
    const json err = j.value("error", json::object());
    const std::string code = err.is_object() ? err.value("code", "filter.internal") : "";
    const std::string message = err.is_object() ? err.value("message", "") : "";
    if (code == "filter.internal") {  // a task can provoke this: it is that task's drop
      o.failed_filter = "filter_error";
      o.reason = tail(message, 1500);
      add_summary(o, key, content_hash, now_unix_ms, json::object());
      return o;
    }
    const ErrorCategory c =
        code == "filter.request" ? ErrorCategory::kInvalidInput : ErrorCategory::kUnavailable;
    return filter_error(c, code, message);
  }
  for (const json& c : j["checks"]) {
    if (!c.is_object()) continue;
    FilterResult r{.filter = c.value("name", "?"),
                   .passed = c.value("passed", false),
                   .reason = c.value("reason", ""),
                   .unix_ms = now_unix_ms,
                   .details_json = c.contains("details") ? c["details"].dump() : ""};
    if (!r.passed && o.failed_filter.empty()) {
      o.failed_filter = r.filter;
      o.reason = r.reason;
      o.oom = c.contains("details") && c["details"].is_object() && c["details"].value("oom", false);
    }
    o.results.push_back(std::move(r));
  }
  auto number = [&](const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
  };
  o.eager_ms = number("eager_ms");
  o.compile_ms = number("compile_ms");
  o.passed = j.value("passed", false) && o.failed_filter.empty();
  if (!o.passed && o.failed_filter.empty()) {
    o.failed_filter = "filter_error";
    o.reason = "the filter did not run every check";
  }
  const json versions = j.value("versions", json::object());
  o.phases_s["lock_wait"] = number("lock_wait_s");
  if (j.contains("phases_s") && j["phases_s"].is_object())
    for (const auto& [name, v] : j["phases_s"].items())
      if (v.is_number()) o.phases_s[name] = v.get<double>();
  add_summary(o, key, content_hash, now_unix_ms,
              {{"device", versions.value("gpu_name", "")},
               {"torch", versions.value("torch", "")},
               {"wall_s", o.wall_s},
               {"lock_wait_s", o.phases_s["lock_wait"]},
               {"peak_gpu_bytes", o.peak_gpu_bytes},
               {"phases_s", o.phases_s}});
  return o;
}

GpuFilterOutcome failed_child_outcome(const SandboxResult& r, std::int64_t wall_ms,
                                      const std::string& key, const std::string& content_hash,
                                      std::int64_t now_unix_ms) {
  GpuFilterOutcome o;
  o.wall_s = r.wall_seconds;
  const std::string out = " (output: " + tail(r.output, 600) + ")";
  switch (r.outcome) {
    case SandboxOutcome::kWallTimeout:
      o.failed_filter = "filter_timeout";
      o.reason = "the filter passed its " + std::to_string(wall_ms) + " ms limit and was killed";
      break;
    case SandboxOutcome::kSignalled:
      o.failed_filter = "filter_crashed";
      o.reason = "the filter died by signal " + std::to_string(r.signal) + out;
      break;
    case SandboxOutcome::kExited:
      o.failed_filter = "filter_crashed";
      o.reason = "the filter exited with " + std::to_string(r.exit_code) + " and no result" + out;
      break;
    default:
      o.failed_filter = "filter_crashed";
      o.reason = "the filter passed a limit: " + std::string(to_string(r.outcome)) + out;
      break;
  }
  add_summary(o, key, content_hash, now_unix_ms, json::object());
  return o;
}

std::optional<FilterResult> stored_gpu_result(const Task& task, const std::string& key) {
  for (const FilterResult& r : task.filters) {
    if (r.filter != kSummary) continue;
    json d = json::parse(r.details_json, nullptr, false);
    // A timeout may come from a crowded machine rather than the task: such a verdict is redone.
    if (d.is_object() && d.value("options_key", "") == key &&
        d.value("content_hash", "") == task.content_hash &&
        d.value("failed_filter", "") != "filter_timeout")
      return r;
  }
  return std::nullopt;
}

Expected<std::unique_ptr<GpuFilter>> GpuFilter::create(GpuFilterOptions o) {
  if (o.device != "cuda" && o.device != "cpu")
    return filter_error(ErrorCategory::kInvalidInput, "filter.options",
                        "device must be cuda or cpu, not '" + o.device + "'");
  if (o.jobs == 0) o.jobs = 1;
  if (o.eager_min_ms < 0 || o.eager_max_ms < o.eager_min_ms)
    return filter_error(ErrorCategory::kInvalidInput, "filter.options",
                        "the eager window [" + std::to_string(o.eager_min_ms) + ", " +
                            std::to_string(o.eager_max_ms) + "] ms is empty");
  ASSIGN_OR_RETURN(std::string python, find_python(o.python));
  ASSIGN_OR_RETURN(std::string script, find_harness_script(o.harness_dir, "filter_task.py"));
  std::string gpu_name = "cpu";
  std::string visible;
  if (o.device == "cuda") {
    DeviceList list = list_devices();
    const DeviceInfo* dev = nullptr;
    for (const auto& d : list.devices)
      if (d.index == o.gpu) dev = &d;
    if (!dev)
      return filter_error(ErrorCategory::kUnavailable, "filter.no_gpu",
                          list.devices.empty()
                              ? "no GPU on this machine (" + list.no_gpu_reason +
                                    "): the task filter runs tasks on a GPU"
                              : "--gpu " + std::to_string(o.gpu) + ": this machine has " +
                                    std::to_string(list.devices.size()) + " GPU(s)");
    gpu_name = dev->name;
    visible = dev->uuid.empty() ? std::to_string(o.gpu) : dev->uuid;
    if (o.memory_budget_bytes <= 0) o.memory_budget_bytes = dev->memory_bytes * 7 / 10;
  }
  if (o.work_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.work_root = std::string(tmp && *tmp ? tmp : "/tmp") + "/cuda-agent-filter-" +
                  std::to_string(::getpid());
  }
  std::error_code ec;
  fs::create_directories(fs::path(o.work_root) / "locks", ec);
  if (ec)
    return filter_error(ErrorCategory::kIo, "filter.job",
                        "cannot create '" + o.work_root + "': " + ec.message());
  ::chmod(o.work_root.c_str(), 0711);
  ::chmod((fs::path(o.work_root) / "locks").c_str(), 0755);
  for (const char* name : {"turnstile.lock", "gpu.lock"})
    RETURN_IF_ERROR(write_file(fs::path(o.work_root) / "locks" / name, ""));
  char window[96];
  std::snprintf(window, sizeof window, "window %g-%g ms trials %d+%d compile %s", o.eager_min_ms,
                o.eager_max_ms, o.warmup_trials, o.timed_trials, o.compile ? "on" : "off");
  std::string key =
      "filter v" + std::to_string(kFilterVersion) + " " + o.device + " " + gpu_name + " " + window;
  // Not in the key: forked or fresh, the checks and their verdicts are the same.
  std::string zygote;
  if (o.zygote) {
    if (!o.zygote_script.empty()) {
      zygote = o.zygote_script;
    } else if (auto z = find_harness_script(fs::path(script).parent_path().string(), "zygote.py")) {
      zygote = *z;
    }
  }
  auto filter = std::unique_ptr<GpuFilter>(
      new GpuFilter(std::move(o), std::move(python), std::move(script), std::move(key), visible));
  filter->zygote_script_ = std::move(zygote);
  return filter;
}

std::unique_ptr<ZygoteSupervisor> GpuFilter::make_zygote() {
  if (zygote_script_.empty()) return nullptr;
  return std::make_unique<ZygoteSupervisor>(ZygoteSupervisorOptions{
      .box = {.python = python_,
              .visible_device = visible_device_,
              .run_as = harness_run_as(options_.run_as_base, options_.gpu),
              .isolate_network = options_.isolate_network},
      .work_root = options_.work_root,
      .dir_prefix = "zygote-" + std::to_string(next_zygote_.fetch_add(1) + 1),
      .zygote_script = zygote_script_,
      .harness_script = script_,
      .max_restarts = options_.zygote_max_restarts,
      .rerun_note = "the task was re-run in a fresh child",
      .error_code = "filter.job"});
}

GpuFilter::GpuFilter(GpuFilterOptions options, std::string python, std::string script,
                     std::string key, std::string visible_device)
    : options_(std::move(options)),
      python_(std::move(python)),
      script_(std::move(script)),
      key_(std::move(key)),
      visible_device_(std::move(visible_device)),
      lock_dir_((fs::path(options_.work_root) / "locks").string()) {}

GpuFilter::~GpuFilter() {
  if (!options_.keep_jobs) {
    std::error_code ec;
    fs::remove_all(options_.work_root, ec);
  }
}

Status GpuFilter::write_job(const Task& task, const std::string& dir_str) const {
  const fs::path dir(dir_str);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir / "tmp", ec);
  if (ec)
    return filter_error(ErrorCategory::kIo, "filter.job",
                        "cannot create '" + dir.string() + "': " + ec.message());
  const fs::path task_py = dir / "model.py";
  RETURN_IF_ERROR(write_file(task_py, task.source));
  json req = {{"format", "cuda-agent-filter-request"},
              {"version", 1},
              {"task_id", task.id.value()},
              {"task_py", task_py.string()},
              {"options",
               {{"device", options_.device == "cuda" ? "cuda:0" : "cpu"},
                {"eager_min_ms", options_.eager_min_ms},
                {"eager_max_ms", options_.eager_max_ms},
                {"warmup_trials", options_.warmup_trials},
                {"timed_trials", options_.timed_trials},
                {"compile", options_.compile},
                {"lock_dir", lock_dir_}}}};
  RETURN_IF_ERROR(write_file(dir / "request.json", req.dump(1)));
  const std::optional<RunAs> run_as = harness_run_as(options_.run_as_base, options_.gpu);
  if (run_as) RETURN_IF_ERROR(hand_job_dir(dir.string(), *run_as, "filter.job"));
  return Status();
}

Expected<GpuFilterOutcome> GpuFilter::run_one(const Task& task) { return run_task(task, nullptr); }

Expected<GpuFilterOutcome> GpuFilter::run_task(const Task& task, ZygoteSupervisor* zygote) {
  using Clock = std::chrono::steady_clock;
  const std::uint64_t seq = next_job_.fetch_add(1, std::memory_order_relaxed) + 1;
  const fs::path dir = fs::path(options_.work_root) / ("job-" + std::to_string(seq));
  struct Cleanup {
    const fs::path& dir;
    bool keep;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove_all(dir, e);
    }
  } cleanup{dir, options_.keep_jobs};
  RETURN_IF_ERROR(write_job(task, dir.string()));
  const fs::path result = dir / "result.json";
  const std::vector<std::string> args = {"--request", (dir / "request.json").string(), "--result",
                                         result.string()};
  std::vector<std::string> argv = {script_};
  argv.insert(argv.end(), args.begin(), args.end());
  const SandboxSpec spec =
      harness_sandbox_spec({.python = python_,
                            .job_dir = dir.string(),
                            .visible_device = visible_device_,
                            .run_as = harness_run_as(options_.run_as_base, options_.gpu),
                            .isolate_network = options_.isolate_network,
                            .wall_ms = options_.task_wall_ms},
                           argv);
  std::optional<SandboxResult> ran;
  double zygote_wait_s = 0;
  if (zygote) {
    ZygoteRun zr =
        zygote->run({.argv = args, .env = spec.env, .dir = dir.string(), .limits = spec.limits},
                    Clock::now() + std::chrono::milliseconds(options_.zygote_ready_ms));
    ran = std::move(zr.result);
    zygote_wait_s = zr.wait_ready_s;
    // Handed over and lost: the task may have changed its directory; write it again.
    if (!ran && zr.pid != 0) RETURN_IF_ERROR(write_job(task, dir.string()));
  }
  const bool forked = ran.has_value();
  if (!ran) {
    ASSIGN_OR_RETURN(SandboxResult sr, run_sandboxed(spec));
    ran = std::move(sr);
  }
  const SandboxResult& sr = *ran;
  auto finish = [&](GpuFilterOutcome o) {
    o.forked = forked;
    if (forked) o.phases_s["zygote_wait"] = zygote_wait_s;
    if (zygote) {
      for (const std::string& n : zygote->take_notes())
        o.zygote_note += (o.zygote_note.empty() ? "" : "; ") + n;
    }
    note_path(o);
    return o;
  };
  const std::int64_t now = now_unix_ms();
  if (sr.outcome != SandboxOutcome::kExited)
    return finish(failed_child_outcome(sr, options_.task_wall_ms, key_, task.content_hash, now));
  std::ifstream in(result, std::ios::binary);
  if (!in)
    return finish(failed_child_outcome(sr, options_.task_wall_ms, key_, task.content_hash, now));
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = parse_filter_result(text.str(), key_, task.content_hash, now);
  if (!parsed) return parsed.error().with_context("filter of " + task.id.value());
  parsed->wall_s = sr.wall_seconds;
  return finish(std::move(*parsed));
}

std::int64_t task_input_bytes(const Task& task) {
  std::int64_t bytes = 0;
  for (const ValueSpec& v : task.inputs) {
    if (v.kind != "tensor") continue;
    if (!v.has_shape) return -1;
    std::int64_t n = dtype_bytes(v.dtype);
    for (std::int64_t d : v.shape) n *= std::max<std::int64_t>(d, 1);
    bytes += n;
  }
  return task.inputs.empty() ? -1 : bytes;
}

std::int64_t GpuFilter::estimate_bytes(const Task& task, double multiplier) const {
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  const std::int64_t in = task_input_bytes(task);
  if (in < 0) return 9 * kGiB;
  return static_cast<std::int64_t>(multiplier * static_cast<double>(in)) + kGiB;
}

Expected<std::size_t> GpuFilter::run_all(
    const std::vector<const Task*>& tasks, std::chrono::steady_clock::time_point deadline,
    const std::function<void(std::size_t, GpuFilterOutcome)>& done) {
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::size_t, GpuFilterOutcome>> finished;
  std::vector<std::size_t> retry;  // out of memory while sharing: again, alone, at the end
  std::optional<Error> failure;
  std::size_t next = 0, running = 0, not_started = 0;
  std::int64_t in_use = 0;
  const std::int64_t budget = options_.memory_budget_bytes;
  // Peak / input bytes of the children so far; the estimate's multiplier follows them.
  std::vector<double> ratios;
  double multiplier = 6.0;
  const std::size_t jobs = std::min(options_.jobs, std::max<std::size_t>(tasks.size(), 1));

  auto worker = [&] {
    // This thread's; made before the lock, so it dies unlocked.
    const std::unique_ptr<ZygoteSupervisor> zygote = options_.zygote ? make_zygote() : nullptr;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      if (failure || next >= tasks.size()) break;
      if (Clock::now() >= deadline) {
        not_started += tasks.size() - next;
        next = tasks.size();
        break;
      }
      const std::int64_t need = budget > 0 ? estimate_bytes(*tasks[next], multiplier) : 0;
      if (budget > 0 && running > 0 && in_use + need > budget) {
        cv.wait_for(lock, std::chrono::seconds(1));  // a finishing child frees its share
        continue;
      }
      const std::size_t i = next++;
      ++running;
      in_use += need;
      lock.unlock();
      Expected<GpuFilterOutcome> o = run_task(*tasks[i], zygote.get());
      lock.lock();
      --running;
      in_use -= need;
      if (o && o->peak_gpu_bytes > 0) {
        const std::int64_t in = task_input_bytes(*tasks[i]);
        if (in >= (std::int64_t{64} << 20)) {  // small inputs say nothing about the ratio
          ratios.push_back(static_cast<double>(o->peak_gpu_bytes) / static_cast<double>(in));
          if (ratios.size() >= 8) {
            // The median, not a high quantile: the ratio has a long tail (an op that expands
            // its input, ConvTranspose2d or stack, reaches 15-150x), and budgeting every task
            // for the tail halves the children that run; the few that then run out of memory
            // are run again alone at the end.
            std::vector<double> r = ratios;
            const std::size_t k = r.size() / 2;
            std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(k), r.end());
            multiplier = std::clamp(1.25 * r[k], 3.0, 8.0);
          }
        }
      }
      if (!o) {
        if (!failure) failure = o.error();
      } else if (o->oom && jobs > 1) {
        retry.push_back(i);
      } else {
        finished.emplace_back(i, std::move(*o));
      }
      cv.notify_all();
    }
    cv.notify_all();
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < jobs; ++t) threads.emplace_back(worker);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      while (!finished.empty()) {
        auto item = std::move(finished.front());
        finished.pop_front();
        lock.unlock();
        done(item.first, std::move(item.second));
        lock.lock();
      }
      if ((next >= tasks.size() || failure) && running == 0) break;
      // Bounded: every child has a wall limit, so `running` reaches 0.
      cv.wait_for(lock, std::chrono::seconds(1));
    }
  }
  for (auto& t : threads) t.join();
  if (failure) return *failure;
  for (std::size_t i : retry) {
    if (Clock::now() >= deadline) {
      ++not_started;
      continue;
    }
    Expected<GpuFilterOutcome> o = run_one(*tasks[i]);
    if (!o) return o.error();
    done(i, std::move(*o));
  }
  return not_started;
}

}  // namespace cuda_agent
