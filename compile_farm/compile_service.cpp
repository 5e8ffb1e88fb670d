#include "compile_farm/compile_service.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "compile_farm/build_steps.h"
#include "compile_farm/compiler_output.h"
#include "compile_farm/file_cache.h"
#include "compile_farm/prototypes.h"
#include "compile_farm/source_checks.h"
#include "compile_farm/symbol_policy.h"
#include "core/clock.h"
#include "core/content_hash.h"
#include "core/log.h"

namespace cuda_agent {
namespace fs = std::filesystem;
using namespace compile_farm;  // NOLINT: this file is the farm's job flow

namespace {

Error request_error(std::string message) {
  return make_error(ErrorCategory::kInvalidInput, "compile.request", std::move(message));
}

Status validate_request(const CompileRequest& r) {
  static const std::regex kArch(R"(sm_[0-9]{2,3}a?)");
  if (!std::regex_match(r.target_arch, kArch))
    return request_error("target arch '" + r.target_arch +
                         "' is not an nvcc -arch value like sm_90 or sm_90a");
  if (r.library_policy == LibraryPolicy::kUnknown)
    return request_error("library policy is unknown to this compile worker (newer client?)");
  static const std::regex kFlag(
      R"((-O[0-3]|-lineinfo|--use_fast_math|-use_fast_math|--extra-device-vectorization|-maxrregcount=[0-9]{1,3}|--maxrregcount=[0-9]{1,3}|-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|--ftz=(true|false)|--prec-div=(true|false)|--prec-sqrt=(true|false)|--fmad=(true|false)|-Xptxas=-O[0-3]))");
  // Macros that change how the CUDA or C++ headers behave (CUDA_API_PER_THREAD_DEFAULT_STREAM moves
  // every launch off the given stream) are reserved: -D of a name starting with CUDA_, CU_ or _.
  static const std::regex kReservedMacro(R"(-D(CUDA_|CU_|_).*)");
  for (const std::string& f : r.extra_flags)
    if (std::regex_match(f, kReservedMacro))
      return make_error(ErrorCategory::kPolicy, "compile.policy",
                        "extra flag '" + f +
                            "' defines a reserved macro (names starting with CUDA_, CU_ or _ "
                            "change how the CUDA and C++ headers behave)");
  for (const std::string& f : r.extra_flags)
    if (!std::regex_match(f, kFlag))
      return make_error(
          ErrorCategory::kPolicy, "compile.policy",
          "extra flag '" + f +
              "' is not allowed (allowed: -O0..3, -lineinfo, --use_fast_math, "
              "-maxrregcount=N, -DNAME[=value], --ftz/--prec-div/--prec-sqrt/--fmad)");
  return Status();
}

/// A counting semaphore with a deadline-free acquire (jobs are bounded by their own deadlines).
class Tokens {
 public:
  explicit Tokens(std::int64_t n) : free_(n) {}
  void acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void release() {
    {
      std::lock_guard lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::int64_t free_;
};

}  // namespace

class CompileService::Impl {
 public:
  CompileServiceOptions options;
  Toolchain toolchain;
  std::string identity;  // build_identity(): toolchain and extra directories, in every cache key
  std::string sandbox_text;
  std::unique_ptr<FileCache> objects, jobs;
  std::unique_ptr<Tokens> tokens;
  mutable std::mutex stats_mu;
  CompileJobStats stats;

  Expected<CompileResult> compile(const CompileRequest& request);
  Expected<CompileResult> build(const CompileRequest& request, const std::string& job_key,
                                const std::vector<LauncherPrototype>& launchers,
                                std::vector<std::string> warnings, Clock::time_point started,
                                Clock::time_point deadline);
  Expected<JobContext> make_job(const std::string& dir, std::uint64_t seq,
                                Clock::time_point deadline);
  void count(void (*f)(CompileJobStats&)) {
    std::lock_guard lock(stats_mu);
    f(stats);
  }
};

namespace {

// Job numbers are process-wide (every service in this process draws from one counter) and start
// at a random point; a job runs as the first uid from run_as_base + (number mod 4096) that no
// other running job on the host holds (core/uid_lease.h), and in its own directory.
std::uint64_t next_job_number() {
  static std::atomic<std::uint64_t> next{std::random_device{}() % 4096};
  return ++next;
}

// The default work root: one per service instance, so that destroying one service never removes
// another's jobs.
std::string default_work_root() {
  static std::atomic<int> instances{0};
  return (fs::temp_directory_path() /
          ("cuda-agent-compile-" + std::to_string(::getpid()) + "-" + std::to_string(instances++)))
      .string();
}

}  // namespace

std::string default_compile_cache_dir() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/cuda-agent/compile";
}

CompileService::CompileService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompileService::~CompileService() {
  std::error_code ec;
  if (impl_ && impl_->options.work_root.find("cuda-agent-compile-") != std::string::npos)
    fs::remove_all(impl_->options.work_root, ec);
}

Expected<std::unique_ptr<CompileService>> CompileService::create(CompileServiceOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.cuda_home.empty()) {
    const char* env = std::getenv("CUDA_HOME");
    options.cuda_home = env && *env ? env : "/usr/local/cuda";
  }
  if (options.work_root.empty()) options.work_root = default_work_root();
  if (options.cache_dir.empty()) options.cache_dir = options.work_root + "/cache";
  if (options.parallel_compilers <= 0)
    options.parallel_compilers = std::max(1u, std::thread::hardware_concurrency());
  std::error_code ec;
  fs::create_directories(options.work_root, ec);
  if (ec)
    return make_error(ErrorCategory::kIo, "compile.io",
                      "cannot create work root '" + options.work_root + "': " + ec.message());
  // Others may pass through (to reach their own job directory) but not list it.
  ::chmod(options.work_root.c_str(), 0711);
  const bool root = ::geteuid() == 0;
  if (!root) options.run_as_base = -1;
  ASSIGN_OR_RETURN(impl->toolchain, probe_toolchain(options.cuda_home, options.work_root));
  impl->identity = build_identity(impl->toolchain, options.include_dirs, options.library_dirs);
  std::int64_t budget = options.use_cache ? options.compile.cache_bytes : 0;
  ASSIGN_OR_RETURN(impl->objects, FileCache::open(options.cache_dir + "/objects", budget * 3 / 4));
  ASSIGN_OR_RETURN(impl->jobs, FileCache::open(options.cache_dir + "/jobs", budget / 4));
  impl->tokens = std::make_unique<Tokens>(options.parallel_compilers);
  const CompileOptions& c = options.compile;
  impl->sandbox_text =
      std::string(options.run_as_base >= 0
                      ? "per-job uid " + std::to_string(options.run_as_base) + "+n"
                      : "same uid (not started as root)") +
      (options.isolate_network && can_isolate_network() ? ", no network" : ", network shared") +
      "; per process: " + std::to_string(c.job_cpu_seconds) + " s CPU, " +
      std::to_string(c.job_memory_bytes >> 20) + " MiB address space, " +
      std::to_string(c.job_output_bytes >> 20) + " MiB files; job wall " +
      std::to_string(c.job_wall_ms / 1000) + " s";
  impl->options = std::move(options);
  log_info("compile service ready",
           {{"toolchain", impl->toolchain.description},
            {"sandbox", impl->sandbox_text},
            {"parallel_compilers", std::to_string(impl->options.parallel_compilers)}});
  return std::unique_ptr<CompileService>(new CompileService(std::move(impl)));
}

const std::string& CompileService::toolchain() const { return impl_->toolchain.description; }
const std::string& CompileService::sandbox_description() const { return impl_->sandbox_text; }
CompileJobStats CompileService::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->stats;
}

Expected<CompileResult> CompileService::compile(const CompileRequest& request) {
  return impl_->compile(request);
}

Expected<JobContext> CompileService::Impl::make_job(const std::string& dir, std::uint64_t seq,
                                                    Clock::time_point deadline) {
  JobContext job;
  job.dir = dir;
  job.toolchain = &toolchain;
  job.deadline = deadline;
  job.limits.wall_ms = options.compile.job_wall_ms;
  job.limits.cpu_seconds = options.compile.job_cpu_seconds;
  job.limits.memory_bytes = options.compile.job_memory_bytes;
  job.limits.file_bytes = options.compile.job_output_bytes;
  job.limits.output_bytes = std::min<std::int64_t>(options.compile.job_output_bytes, 4 << 20);
  job.isolate_network = options.isolate_network;
  if (options.run_as_base >= 0) {
    // Starting at the job number, the first uid no running job on this host holds.
    ASSIGN_OR_RETURN(UidLease lease, UidLease::acquire(options.run_as_base, seq, 4096));
    job.run_as = RunAs{lease.uid(), lease.uid()};
    job.uid_lease = std::make_shared<const UidLease>(std::move(lease));
  }
  job.include_dirs = options.include_dirs;
  job.library_dirs = options.library_dirs;
  return job;
}

Expected<CompileResult> CompileService::Impl::compile(const CompileRequest& request) {
  const auto started = Clock::now();
  count([](CompileJobStats& s) { ++s.jobs; });
  Clock::time_point deadline = started + std::chrono::milliseconds(options.compile.job_wall_ms);
  if (request.header.deadline_unix_ms > 0) {
    auto left = std::chrono::milliseconds(request.header.deadline_unix_ms - now_unix_ms());
    if (left.count() <= 0)
      return make_error(ErrorCategory::kTimeout, "compile.deadline",
                        "the request's deadline passed before the build started");
    deadline = std::min(deadline, started + left);
  }
  RETURN_IF_ERROR(validate_request(request));
  std::vector<Finding> findings = check_sources(request.files, request.library_policy);
  if (has_errors(findings))
    return make_error(ErrorCategory::kPolicy, "compile.policy",
                      "the solution breaks the source policy:\n" + format_findings(findings));
  std::vector<std::string> warnings;
  for (const Finding& f : findings) warnings.push_back(f.to_string());
  ASSIGN_OR_RETURN(std::vector<LauncherPrototype> launchers, parse_launchers(request.files));

  // The normalised inputs and the build identity, not the output: a hit never starts nvcc.
  const std::string job_key = job_cache_key(request, identity);
  if (auto cached = jobs->get(job_key)) {
    auto reply = decode_compile_reply(*cached);
    if (reply && reply->outcome) {
      count([](CompileJobStats& s) { ++s.job_cache_hits; });
      CompileResult r = std::move(*reply->outcome);
      r.cache_hit = true;
      r.total_seconds = std::chrono::duration<double>(Clock::now() - started).count();
      return r;
    }
  }
  auto result = build(request, job_key, launchers, std::move(warnings), started, deadline);
  if (result) {
    CompileReply reply{request.header.request_id, *result};
    (void)jobs->put(job_key, encode_compile_reply(reply));
  }
  return result;
}

Expected<CompileResult> CompileService::Impl::build(const CompileRequest& request,
                                                    const std::string& job_key,
                                                    const std::vector<LauncherPrototype>& launchers,
                                                    std::vector<std::string> warnings,
                                                    Clock::time_point started,
                                                    Clock::time_point deadline) {
  const std::uint64_t seq = next_job_number();
  const std::string dir =
      options.work_root + "/job-" + std::to_string(::getpid()) + "-" + std::to_string(seq);
  ASSIGN_OR_RETURN(JobContext job, make_job(dir, seq, deadline));
  RETURN_IF_ERROR(prepare_job_dir(job, request.files));
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  // Every header of the solution is part of each object's key: an edit to one header rebuilds
  // every file (simple and safe; solutions are small).
  ContentHasher headers;
  for (const SourceFile& f : request.files)
    if (is_header(f.path)) headers.add(f.path).add(f.content);
  const std::string headers_hash = headers.hex();

  std::vector<const SourceFile*> sources;
  for (const SourceFile& f : request.files)
    if (is_compiled_source(f.path)) sources.push_back(&f);
  if (sources.empty())
    return make_error(ErrorCategory::kInvalidInput, "compile.no_source",
                      "no kernels/*.cu or kernels/*.cpp file to compile");

  std::vector<Expected<ObjectBuild>> built(sources.size(), Error{});
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    threads.emplace_back([&, i] {
      const SourceFile& f = *sources[i];
      ContentHasher object_key;
      object_key.add("object-v2")
          .add(identity)
          .add(request.target_arch)
          .add(f.path)
          .add(f.content)
          .add(headers_hash);
      for (const std::string& x : request.extra_flags) object_key.add(x);
      const std::string full_key = object_key.hex();
      if (auto hit = objects->get(full_key)) {
        built[i] = restore_object(job, f.path, *hit);
        if (built[i]) {
          count([](CompileJobStats& s) { ++s.object_cache_hits; });
          return;
        }
      }
      tokens->acquire();
      built[i] = compile_object(job, f.path, request.target_arch, request.extra_flags);
      tokens->release();
      if (built[i]) {
        count([](CompileJobStats& s) { ++s.objects_compiled; });
        (void)objects->put(full_key, pack_object(*built[i]));
      }
    });
  }
  for (auto& t : threads) t.join();

  CompileResult result;
  std::string log;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!built[i]) return built[i].error();
    const ObjectBuild& ob = *built[i];
    result.file_timings.push_back({sources[i]->path, ob.cached ? 0.0 : ob.seconds});
    for (KernelResources& k : parse_ptxas(ob.output)) result.kernels.push_back(std::move(k));
    for (std::string& w : compiler_warnings(ob.output)) warnings.push_back(std::move(w));
    log += trim_compiler_log(ob.output);
  }
  std::vector<std::string> objects_in_order;
  for (const SourceFile* f : sources) objects_in_order.push_back(object_path(f->path));
  ASSIGN_OR_RETURN(LinkOutput linked, link_artifact(job, objects_in_order, request.target_arch,
                                                    request.files, request.library_policy));
  log += trim_compiler_log(linked.output);
  std::vector<Finding> symbol_findings =
      check_symbols(linked.symbols, launchers, request.library_policy, "the built shared object");
  if (has_errors(symbol_findings))
    return make_error(
        ErrorCategory::kPolicy, "compile.policy",
        "the built shared object breaks the symbol policy:\n" + format_findings(symbol_findings));

  result.artifact_hash = content_hash(linked.bytes);
  result.artifact_size_bytes = linked.bytes.size();
  result.artifact = std::move(linked.bytes);
  result.prototypes = launchers;
  result.warnings = std::move(warnings);
  result.log = std::move(log);
  result.total_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  result.toolchain = toolchain.description;
  result.sandboxed = sandbox_text;
  return result;
}

}  // namespace cuda_agent
