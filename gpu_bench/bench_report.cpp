#include "gpu_bench/bench_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace cuda_agent {
namespace {
using json = nlohmann::json;

std::string tier_text(int tier) { return tier > 0 ? fmt::format("+{}", tier) : "-1"; }

std::string tier_reason(const BenchEvaluation& e, double threshold) {
  const BenchResult& r = e.result;
  const int pct = static_cast<int>(std::lround(threshold * 100));
  switch (r.reward.tier) {
    case 3: return fmt::format("correct, >{}% faster than eager and torch.compile", pct);
    case 2:
      return fmt::format("correct, >{}% faster than eager; {}", pct,
                         r.speedup_vs_compile > 0
                             ? fmt::format("not >{}% faster than torch.compile", pct)
                             : std::string("no torch.compile baseline"));
    case 1:
      return r.candidate_trial_us.empty()
                 ? "correct (not timed: run --mode benchmark for speed tiers)"
                 : fmt::format("correct, not >{}% faster than eager", pct);
    default: return "failed: a check or a policy rule (below)";
  }
}

/// JSON numbers cannot be inf or nan.
json num(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

void add_spread(std::string& out, const char* name, const std::vector<double>& trials,
                const BenchEvaluation& e) {
  if (trials.empty()) return;
  auto it = e.harness.spreads.find(name);
  const double med = median_of(trials);
  if (it == e.harness.spreads.end()) {
    out += fmt::format("  {:<10} median {:>10.2f}  ({} trials)\n", name, med, trials.size());
    return;
  }
  const TrialSpread& s = it->second;
  out += fmt::format(
      "  {:<10} median {:>10.2f}  IQR {:>8.2f}  min {:>10.2f}  max {:>10.2f}  "
      "cv {:>5.1f}%  ({} trials)\n",
      name, med, s.iqr, s.min, s.max, 100.0 * s.cv, trials.size());
}

}  // namespace

std::string bench_report_text(const BenchEvaluation& e, const BenchReportContext& ctx) {
  const BenchResult& r = e.result;
  const AuditRecord& a = r.audit;
  std::string out = fmt::format("bench {}: mode {} on {} (driver {}, torch {}, SM {} MHz)\n",
                                ctx.task_id.empty() ? "(task)" : ctx.task_id, ctx.mode, a.gpu_name,
                                a.driver_version, a.torch_version, a.sm_clock_mhz);
  out += fmt::format("artifact {}", a.artifact_hash.substr(0, 16));
  if (ctx.compile_seconds > 0)
    out += fmt::format(" (built in {:.2f} s{})", ctx.compile_seconds,
                       ctx.compile_cache_hit ? ", cache hit" : "");
  out += "\n";
  if (!ctx.kernels.empty()) {
    out += fmt::format("kernels (ptxas):\n  {:>5} {:>7} {:>6} {:>11}  name\n", "regs", "smem B",
                       "stack", "spill st/ld");
    for (const KernelResources& k : ctx.kernels)
      out += fmt::format(
          "  {:>5} {:>7} {:>6} {:>11}  {}\n", k.registers, k.static_smem_bytes, k.stack_bytes,
          fmt::format("{}/{}", k.spill_store_bytes, k.spill_load_bytes), k.demangled_name);
  }
  std::size_t passed = 0;
  for (const BenchCheck& c : r.checks) passed += c.passed ? 1 : 0;
  out += fmt::format("checks: {} of {} passed\n", passed, r.checks.size());
  // A passed check repeated over input sets ("run[seed=...]") is one line with its count; a failed
  // one keeps its full name and errors.
  std::vector<std::pair<std::string, int>> passed_kinds;
  for (const BenchCheck& c : r.checks) {
    if (!c.passed) continue;
    std::string kind = c.name.substr(0, c.name.find('['));
    auto it = std::find_if(passed_kinds.begin(), passed_kinds.end(),
                           [&](const auto& p) { return p.first == kind; });
    if (it == passed_kinds.end())
      passed_kinds.emplace_back(std::move(kind), 1);
    else
      ++it->second;
  }
  for (const auto& [kind, n] : passed_kinds)
    out += "  ok    " + kind + (n > 1 ? fmt::format(" (x{})", n) : std::string()) + "\n";
  for (const BenchCheck& c : r.checks) {
    if (c.passed) continue;
    out += "  FAIL  " + c.name;
    if (c.max_abs_error != 0 || c.max_rel_error != 0)
      out += fmt::format("  max abs {:.4g}  max rel {:.4g}", c.max_abs_error, c.max_rel_error);
    if (c.first_mismatch_index >= 0)
      out += fmt::format("  first mismatch at flat index {}", c.first_mismatch_index);
    out += "\n";
    if (!c.message.empty()) out += "        " + c.message.substr(0, 1200) + "\n";
  }
  if (!r.candidate_trial_us.empty()) {
    out += "times (us per forward; L2 flushed; interleaved rounds; device-wide sync):\n";
    add_spread(out, "candidate", r.candidate_trial_us, e);
    add_spread(out, "eager", r.eager_trial_us, e);
    add_spread(out, "compile", r.compile_trial_us, e);
    if (r.eager_trial_us.empty() && r.speedup_vs_eager > 0)
      out += "  (baselines from the cache, not re-measured)\n";
    if (!e.harness.compile_baseline_error.empty())
      out += "  torch.compile baseline unavailable: " + e.harness.compile_baseline_error + "\n";
    out += fmt::format("speedup: {:.3f}x vs eager, {}\n", r.speedup_vs_eager,
                       r.speedup_vs_compile > 0
                           ? fmt::format("{:.3f}x vs torch.compile", r.speedup_vs_compile)
                           : std::string("no torch.compile baseline"));
  }
  out += fmt::format("reward: tier {} ({})", tier_text(r.reward.tier),
                     tier_reason(e, ctx.faster_threshold));
  if (r.reward.continuous != 0) out += fmt::format(", continuous {:.4f}", r.reward.continuous);
  out += "\n";
  if (r.violations.empty()) {
    out += "policy findings: none\n";
  } else {
    out += "policy findings:\n";
    for (const PolicyViolation& v : r.violations) out += "  " + v.rule + ": " + v.detail + "\n";
  }
  if (!r.profile_report.empty()) out += r.profile_report + "\n";
  out += "precision:";
  for (const std::string& f : a.precision_flags) out += " " + f;
  out += "\n";
  out += fmt::format("time: harness {:.2f} s wall", e.result.harness_seconds);
  std::string parts;
  for (const char* k : {"startup", "cuda_init", "load", "checks", "compile_baseline_build",
                        "baselines", "trials", "recheck"}) {
    auto it = e.result.phases_s.find(k);
    if (it != e.result.phases_s.end())
      parts += fmt::format("{}{} {:.2f}", parts.empty() ? "" : ", ", k, it->second);
  }
  if (!parts.empty()) out += " (" + parts + ")";
  out += "\nsandbox: " + e.sandbox + "\n";
  for (const std::string& n : e.harness.notes) out += "note: " + n + "\n";
  return out;
}

std::string bench_report_json(const BenchEvaluation& e, const BenchReportContext& ctx, int indent) {
  const BenchResult& r = e.result;
  json j;
  j["ok"] = true;
  j["passed"] = e.passed;
  j["task_id"] = ctx.task_id;
  j["mode"] = ctx.mode;
  j["reward"] = {{"tier", r.reward.tier}, {"continuous", r.reward.continuous}};
  j["speedup_vs_eager"] = r.speedup_vs_eager;
  j["speedup_vs_compile"] = r.speedup_vs_compile;
  json checks = json::array();
  for (const BenchCheck& c : r.checks)
    checks.push_back({{"name", c.name},
                      {"passed", c.passed},
                      {"max_abs_error", num(c.max_abs_error)},
                      {"max_rel_error", num(c.max_rel_error)},
                      {"first_mismatch_index", c.first_mismatch_index},
                      {"message", c.message}});
  j["checks"] = checks;
  json violations = json::array();
  for (const PolicyViolation& v : r.violations)
    violations.push_back({{"rule", v.rule}, {"detail", v.detail}});
  j["violations"] = violations;
  j["trials_us"] = {{"candidate", r.candidate_trial_us},
                    {"eager", r.eager_trial_us},
                    {"compile", r.compile_trial_us}};
  json spreads = json::object();
  for (const auto& [name, s] : e.harness.spreads)
    spreads[name] = {
        {"median", s.median}, {"min", s.min}, {"max", s.max}, {"iqr", s.iqr}, {"cv", s.cv}};
  j["spread_us"] = spreads;
  json kernels = json::array();
  for (const KernelResources& k : ctx.kernels)
    kernels.push_back({{"name", k.demangled_name},
                       {"registers", k.registers},
                       {"static_smem_bytes", k.static_smem_bytes},
                       {"stack_bytes", k.stack_bytes},
                       {"spill_store_bytes", k.spill_store_bytes},
                       {"spill_load_bytes", k.spill_load_bytes}});
  j["kernels"] = kernels;
  const AuditRecord& a = r.audit;
  j["audit"] = {{"task_hash", a.task_hash},
                {"artifact_hash", a.artifact_hash},
                {"toolchain", a.toolchain},
                {"torch_version", a.torch_version},
                {"driver_version", a.driver_version},
                {"gpu_name", a.gpu_name},
                {"sm_clock_mhz", a.sm_clock_mhz},
                {"mem_clock_mhz", a.mem_clock_mhz},
                {"precision_flags", a.precision_flags},
                {"checks_run", a.checks_run},
                {"worker_id", a.worker_id.value()},
                {"measured_unix_ms", a.measured_unix_ms}};
  j["breakdown_s"] = e.result.phases_s;
  j["harness_wall_s"] = e.result.harness_seconds;
  j["notes"] = e.harness.notes;
  j["seeds"] = e.harness.seeds;
  j["profile_report"] = r.profile_report;
  j["sandbox"] = e.sandbox;
  j["from_zygote"] = e.from_zygote;
  return j.dump(indent);
}

std::string bench_error_json(const Error& error, int indent) {
  json j = {{"ok", false},
            {"error",
             {{"category", to_string(error.category)},
              {"code", error.code},
              {"message", error.message}}}};
  return j.dump(indent);
}

}  // namespace cuda_agent
