#include "compile_farm/build_steps.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "compile_farm/compiler_output.h"
#include "compile_farm/file_cache.h"
#include "compile_farm/prototypes.h"
#include "core/content_hash.h"

namespace cuda_agent::compile_farm {
namespace fs = std::filesystem;
namespace {

// How a solution is built, as far as the cache must know: an object or job built under another
// recipe is never reused (it is part of Toolchain::id). Bump it with every change to the flags of
// compile_object or link_artifact.
//   2: -ffunction-sections, and the link exports only the launchers (version script) and drops
//      what they cannot reach (--gc-sections); see link_artifact.
//   3: reproducible objects: PWD=/proc/self/cwd, sources dated at the epoch, tmpxft names
//      normalised (make_reproducible).
constexpr std::string_view kBuildRecipe = "recipe 3";

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string last_nonempty_line(const std::string& s) {
  std::size_t e = s.find_last_not_of("\n ");
  if (e == std::string::npos) return "";
  std::size_t b = s.rfind('\n', e);
  return s.substr(b == std::string::npos ? 0 : b + 1, e - (b == std::string::npos ? 0 : b + 1) + 1);
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/local/bin:/usr/bin:/bin";
  std::size_t b = 0;
  while (b <= dirs.size()) {
    std::size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    std::string candidate = dirs.substr(b, e - b) + "/" + name;
    if (e > b && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    b = e + 1;
  }
  return "";
}

// PWD=/proc/self/cwd: the device compiler (cicc, LLVM) and gcc take the working directory they
// write into the object (the -lineinfo line tables' directory) from $PWD when it names the working
// directory, and /proc/self/cwd always does. The job directory's own path (worker pid, job number)
// stays out of the artifact, so the same solution gives the same bytes in every job and worker.
std::vector<std::string> environment(const Toolchain& tc, const std::string& dir) {
  return {"PATH=" + tc.path_env, "HOME=" + dir, "TMPDIR=" + dir + "/tmp", "LANG=C", "LC_ALL=C",
          "PWD=/proc/self/cwd"};
}

Error tool_failure(std::string code, const std::string& what, const std::string& detail) {
  return make_error(ErrorCategory::kInvalidInput, std::move(code), what + ": " + detail);
}

/// Runs one tool of the job in the sandbox and maps every way it can end to the job's errors.
/// `what` names the step for the messages ("nvcc on kernels/a.cu").
Expected<SandboxResult> run_step(const JobContext& job, std::vector<std::string> argv,
                                 const std::string& what) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - Clock::now());
  if (left.count() <= 0)
    return make_error(ErrorCategory::kTimeout, "compile.deadline",
                      what + ": the job's time ran out before this step");
  SandboxSpec spec;
  spec.argv = std::move(argv);
  spec.env = environment(*job.toolchain, job.dir);
  spec.work_dir = job.dir;
  spec.limits = job.limits;
  spec.limits.wall_ms = std::min<std::int64_t>(left.count(), job.limits.wall_ms);
  spec.run_as = job.run_as;
  spec.isolate_network = job.isolate_network;
  ASSIGN_OR_RETURN(SandboxResult r, run_sandboxed(spec));
  const std::string tail = last_nonempty_line(r.output);
  switch (r.outcome) {
    case SandboxOutcome::kWallTimeout:
      return tool_failure("compile.timeout", what,
                          "stopped after " + std::to_string(spec.limits.wall_ms / 1000) +
                              " s of wall-clock time (the job's limit)");
    case SandboxOutcome::kCpuLimit:
      return tool_failure(
          "compile.cpu_limit", what,
          "stopped at the CPU-time limit of " + std::to_string(job.limits.cpu_seconds) + " s");
    case SandboxOutcome::kOutputLimit:
      return tool_failure(
          "compile.output_limit", what,
          "stopped after printing more than " + std::to_string(job.limits.output_bytes >> 20) +
              " MiB of diagnostics; the first ones:\n" + trim_compiler_log(r.output));
    case SandboxOutcome::kFileLimit:
      return tool_failure("compile.file_limit", what,
                          "tried to write a file larger than " +
                              std::to_string(job.limits.file_bytes >> 20) + " MiB");
    case SandboxOutcome::kSignalled:
    case SandboxOutcome::kExited: break;
  }
  const std::string& out = r.output;
  auto has = [&](std::string_view s) { return out.find(s) != std::string::npos; };
  if (r.outcome == SandboxOutcome::kExited && r.exit_code == 0) return r;
  if (has("died due to signal 25") || has("File size limit exceeded"))
    return tool_failure("compile.file_limit", what,
                        "a compiler stage tried to write a file larger than " +
                            std::to_string(job.limits.file_bytes >> 20) + " MiB");
  if (has("died due to signal 24") || has("died due to signal 9"))
    return tool_failure("compile.cpu_limit", what,
                        "a compiler stage was stopped at the CPU-time limit of " +
                            std::to_string(job.limits.cpu_seconds) + " s");
  if (has("out of memory") || has("std::bad_alloc") || has("Cannot allocate memory") ||
      has("memory exhausted") || has("virtual memory exhausted"))
    return tool_failure("compile.memory_limit", what,
                        "ran out of its " + std::to_string(job.limits.memory_bytes >> 20) +
                            " MiB memory limit: " + tail);
  std::string log = trim_compiler_log(out);
  return make_error(ErrorCategory::kInvalidInput, "compile.failed",
                    what + " failed" +
                        (r.outcome == SandboxOutcome::kSignalled
                             ? " (killed by signal " + std::to_string(r.signal) + ")"
                             : "") +
                        ":\n" + (log.empty() ? tail : log));
}

Status chown_for_job(const JobContext& job, const std::string& path) {
  if (!job.run_as) return Status();
  if (::lchown(path.c_str(), job.run_as->uid, job.run_as->gid) != 0)
    return make_error(ErrorCategory::kIo, "compile.io",
                      "cannot hand '" + path + "' to uid " + std::to_string(job.run_as->uid));
  return Status();
}

}  // namespace

Expected<Toolchain> probe_toolchain(const std::string& cuda_home, const std::string& scratch_dir) {
  Toolchain tc;
  tc.cuda_home = cuda_home;
  tc.nvcc = cuda_home + "/bin/nvcc";
  auto unavailable = [](std::string m) {
    return make_error(ErrorCategory::kUnavailable, "compile.toolchain", std::move(m));
  };
  if (::access(tc.nvcc.c_str(), X_OK) != 0)
    return unavailable("nvcc not found at '" + tc.nvcc +
                       "' (set CUDA_HOME or [compile] cuda_home)");
  tc.nm = find_on_path("nm");
  tc.readelf = find_on_path("readelf");
  std::string cxx = find_on_path("g++");
  if (tc.nm.empty() || tc.readelf.empty() || cxx.empty())
    return unavailable("nm, readelf and g++ (binutils, build-essential) must be on PATH");
  tc.path_env = cuda_home + "/bin:" + fs::path(cxx).parent_path().string() + ":/usr/bin:/bin";
  std::string versions;
  for (const std::string& tool : {tc.nvcc, cxx}) {
    SandboxSpec spec{.argv = {tool, "--version"},
                     .env = {"PATH=" + tc.path_env, "LANG=C"},
                     .work_dir = scratch_dir};
    spec.limits.wall_ms = 30'000;
    auto r = run_sandboxed(spec);
    if (!r || r->outcome != SandboxOutcome::kExited || r->exit_code != 0)
      return unavailable("'" + tool + " --version' failed: " +
                         (r ? last_nonempty_line(r->output) : r.error().message));
    versions += (tool == tc.nvcc
                     ? "nvcc: " + last_nonempty_line(r->output.substr(0, r->output.rfind("Build")))
                     : "host: " + first_line(r->output)) +
                "\n";
  }
  tc.description = versions.substr(0, versions.size() - 1);
  tc.id = content_hash(tc.description + "\n" + std::string(kBuildRecipe));
  return tc;
}

Status prepare_job_dir(const JobContext& job, const std::vector<SourceFile>& files) {
  std::error_code ec;
  for (const char* sub : {"", "/kernels", "/obj", "/tmp"}) {
    std::string d = job.dir + sub;
    if (!fs::create_directory(d, ec) || ec)
      return make_error(ErrorCategory::kIo, "compile.io",
                        "cannot create job directory '" + d +
                            "': " + (ec ? ec.message() : std::string("it already exists")));
    ::chmod(d.c_str(), 0700);
    RETURN_IF_ERROR(chown_for_job(job, d));
  }
  for (const SourceFile& f : files) {
    if (f.path == "model_new.py") continue;  // the bench's input, not the compiler's
    std::string p = job.dir + "/" + f.path;
    RETURN_IF_ERROR(write_file(p, f.content, 0600));
    // Every source's modification time is the epoch: -lineinfo's line tables record it, and the
    // time a job happened to write the file must not make its artifact differ from another job's.
    const timespec epoch[2] = {{0, 0}, {0, 0}};
    if (::utimensat(AT_FDCWD, p.c_str(), epoch, AT_SYMLINK_NOFOLLOW) != 0)
      return make_error(ErrorCategory::kIo, "compile.io",
                        "cannot set the time of '" + p + "': " + std::strerror(errno));
    RETURN_IF_ERROR(chown_for_job(job, p));
  }
  return Status();
}

std::size_t make_reproducible(std::string& object) {
  static constexpr std::string_view kPrefix = "tmpxft_";
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  std::size_t replaced = 0;
  for (std::size_t at = object.find(kPrefix); at != std::string::npos;
       at = object.find(kPrefix, at + 1)) {
    const std::size_t digits = at + kPrefix.size();
    if (digits + 9 > object.size() || object[digits + 8] != '_') continue;
    if (!std::all_of(object.begin() + digits, object.begin() + digits + 8, hex)) continue;
    if (object.compare(digits, 8, "00000000") == 0) continue;
    std::fill(object.begin() + digits, object.begin() + digits + 8, '0');
    ++replaced;
  }
  return replaced;
}

std::string build_identity(const Toolchain& toolchain, const std::vector<std::string>& include_dirs,
                           const std::vector<std::string>& library_dirs) {
  ContentHasher h;
  h.add("build-identity-v1").add(toolchain.id).add(include_dirs.size());
  for (const std::string& d : include_dirs) h.add(d);
  h.add(library_dirs.size());
  for (const std::string& d : library_dirs) h.add(d);
  return h.hex();
}

std::string job_cache_key(const CompileRequest& request, std::string_view build_identity) {
  ContentHasher key;
  key.add("job-v2")
      .add(build_identity)
      .add(request.target_arch)
      .add(static_cast<std::uint64_t>(request.library_policy))
      .add(request.extra_flags.size());
  for (const std::string& f : request.extra_flags) key.add(f);
  std::vector<const SourceFile*> sorted;
  for (const SourceFile& f : request.files)
    if (f.path != "model_new.py") sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(), [](const SourceFile* a, const SourceFile* b) {
    return a->path != b->path ? a->path < b->path : a->content < b->content;
  });
  key.add(sorted.size());
  for (const SourceFile* f : sorted) key.add(f->path).add(f->content);
  return key.hex();
}

std::string object_path(const std::string& source_path) {
  std::string flat = source_path;
  std::replace(flat.begin(), flat.end(), '/', '_');
  return "obj/" + flat + ".o";
}

Expected<ObjectBuild> compile_object(const JobContext& job, const std::string& source_path,
                                     const std::string& arch,
                                     const std::vector<std::string>& extra_flags) {
  const Toolchain& tc = *job.toolchain;
  // -ffunction-sections: each host function in its own section, so that the link can drop the
  // ones no launcher reaches (link_artifact).
  std::vector<std::string> argv = {
      tc.nvcc,   "-std=c++17", "-O3",   "-arch=" + arch, "-Xptxas",
      "-v",      "-Xcompiler", "-fPIC", "-Xcompiler",    "-ffunction-sections",
      "-cudart", "shared",     "-I."};
  for (const auto& d : job.include_dirs) argv.push_back("-I" + d);
  for (const auto& f : extra_flags) argv.push_back(f);
  argv.insert(argv.end(), {"-c", source_path, "-o", object_path(source_path)});
  auto started = Clock::now();
  ASSIGN_OR_RETURN(SandboxResult r, run_step(job, std::move(argv), "nvcc on " + source_path));
  ObjectBuild out;
  out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  out.output = std::move(r.output);
  ASSIGN_OR_RETURN(out.object, read_regular_file(job.dir + "/" + object_path(source_path),
                                                 job.limits.file_bytes));
  // The linker reads the object from the job directory: it must get the normalised bytes too.
  if (make_reproducible(out.object) > 0)
    RETURN_IF_ERROR(write_file(job.dir + "/" + object_path(source_path), out.object, 0644));
  return out;
}

std::string pack_object(const ObjectBuild& build) {
  return std::to_string(build.output.size()) + "\n" + build.output + build.object;
}

Expected<ObjectBuild> restore_object(const JobContext& job, const std::string& source_path,
                                     const std::string& packed) {
  std::size_t nl = packed.find('\n');
  std::size_t n = nl == std::string::npos ? 0 : std::strtoull(packed.c_str(), nullptr, 10);
  if (nl == std::string::npos || nl + 1 + n > packed.size())
    return make_error(ErrorCategory::kIo, "compile.io", "corrupt object cache entry");
  ObjectBuild out;
  out.output = packed.substr(nl + 1, n);
  out.object = packed.substr(nl + 1 + n);
  out.cached = true;
  std::string path = job.dir + "/" + object_path(source_path);
  RETURN_IF_ERROR(write_file(path, out.object, 0644));
  RETURN_IF_ERROR(chown_for_job(job, path));
  return out;
}

Expected<LinkOutput> link_artifact(const JobContext& job, const std::vector<std::string>& objects,
                                   const std::string& arch, const std::vector<SourceFile>& files,
                                   LibraryPolicy policy) {
  const Toolchain& tc = *job.toolchain;
  bool cublas = false, cudnn = false;
  for (const SourceFile& f : files) {
    cublas = cublas || f.content.find("cublas") != std::string::npos;
    cudnn = cudnn || f.content.find("cudnn") != std::string::npos;
  }
  // What the symbol policy judges is what the solution's code does, not how nvcc lowers it or
  // how the solution splits its files. nvcc gives every __device__ function with external
  // linkage a host stub (`{ volatile int x = 1; exit(x); }`), and a host helper called from
  // another file needs external linkage; neither is the solution's behaviour. So the link
  //   - exports only the extern "C" launchers (a version script from the prototype extractor's
  //     names, everything else local), so helpers, stubs, __constant__ shadows and template
  //     instantiations stay inside the shared object;
  //   - keeps only the code reachable from those launchers, from the static initialisers (nvcc's
  //     kernel registration and the solution's own constructors) and from what they reference
  //     (--gc-sections over -ffunction-sections objects). A stub of a __device__ function is
  //     referenced by no host code, so it and its `exit` import are gone.
  // Robust by construction: no stub is recognised by its shape, so none can be imitated. Every
  // host function that can run is still in the object and every function it calls is still an
  // import the policy judges: a real exit(), fopen or pthread_create anywhere reachable (also a
  // host call through a __device__ function's address, which does run nvcc's stub and exit)
  // stays refused; code that nothing can call is not in the artifact at all.
  ASSIGN_OR_RETURN(std::vector<LauncherPrototype> launchers, parse_launchers(files));
  std::string script = "{\n  global:\n";
  for (const LauncherPrototype& l : launchers) {
    const bool identifier =
        !l.name.empty() && !std::isdigit(static_cast<unsigned char>(l.name[0])) &&
        std::all_of(l.name.begin(), l.name.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!identifier)  // the extractor only yields identifiers; a glob here would export more
      return make_error(ErrorCategory::kInvalidInput, "compile.prototype",
                        "launcher name '" + l.name + "' is not a C identifier");
    script += "    " + l.name + ";\n";
  }
  script += "  local:\n    *;\n};\n";
  const std::string script_path = job.dir + "/exports.map";
  RETURN_IF_ERROR(write_file(script_path, script, 0644));
  RETURN_IF_ERROR(chown_for_job(job, script_path));

  std::vector<std::string> argv = {tc.nvcc, "-shared", "-cudart", "shared", "-arch=" + arch};
  argv.insert(argv.end(), objects.begin(), objects.end());
  argv.insert(argv.end(), {"-o", "artifact.so", "-Xlinker", "-zdefs", "-Xlinker",
                           "--version-script=exports.map", "-Xlinker", "--gc-sections"});
  for (const auto& d : job.library_dirs) argv.push_back("-L" + d);
  if (policy == LibraryPolicy::kDefault && cublas)
    argv.insert(argv.end(), {"-lcublas", "-lcublasLt"});
  if (policy == LibraryPolicy::kDefault && cudnn) argv.push_back("-lcudnn");
  ASSIGN_OR_RETURN(SandboxResult linked, run_step(job, std::move(argv), "linking"));
  LinkOutput out;
  out.output = std::move(linked.output);
  ASSIGN_OR_RETURN(out.bytes, read_regular_file(job.dir + "/artifact.so", job.limits.file_bytes));
  ASSIGN_OR_RETURN(SandboxResult nm,
                   run_step(job, {tc.nm, "-D", "--format=posix", "artifact.so"}, "nm"));
  ASSIGN_OR_RETURN(SandboxResult re, run_step(job, {tc.readelf, "-d", "artifact.so"}, "readelf"));
  out.symbols = parse_dynamic_symbols(nm.output, re.output);
  return out;
}

}  // namespace cuda_agent::compile_farm
