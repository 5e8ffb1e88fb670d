#include "gpu_bench/harness_protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace cuda_agent {
namespace {
using json = nlohmann::json;

Error bad(const std::string& what) {
  return make_error(ErrorCategory::kInternal, "bench.result", "harness result: " + what);
}

/// A number, or one of the strings "inf", "-inf", "nan"; `fallback` when absent or null.
double number(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return fallback;
}

bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

std::vector<double> numbers(const json& j, const char* key) {
  std::vector<double> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_number()) out.push_back(v.get<double>());
  return out;
}

ErrorCategory category_from(const std::string& name) {
  for (auto c : {ErrorCategory::kInvalidInput, ErrorCategory::kNotFound, ErrorCategory::kIo,
                 ErrorCategory::kTimeout, ErrorCategory::kUnavailable, ErrorCategory::kPolicy,
                 ErrorCategory::kInternal})
    if (to_string(c) == name) return c;
  return ErrorCategory::kInternal;
}

}  // namespace

std::string harness_request_json(const HarnessRequest& r) {
  json protos = json::array();
  for (const auto& p : r.prototypes) {
    json params = json::array();
    for (const auto& q : p.params)
      params.push_back({{"name", q.name}, {"c_type", q.c_type}, {"kind", to_string(q.kind)}});
    protos.push_back({{"name", p.name}, {"params", params}});
  }
  const HarnessOptions& o = r.options;
  json j = {
      {"format", kHarnessRequestFormat},
      {"version", kHarnessFormatVersion},
      {"mode", to_string(r.mode)},
      {"task_model_py", r.task_model_py},
      {"model_new_py", r.model_new_py},
      {"library", r.library},
      {"prototypes", protos},
      {"device", r.device},
      {"seeds", r.seeds},
      {"options",
       {{"tolerance_profile", o.tolerance_profile},
        {"verify_input_sets", o.verify_input_sets},
        {"warmup_trials", o.warmup_trials},
        {"timed_trials", o.timed_trials},
        {"input_sets", o.input_sets},
        {"checked_trial_fraction", o.checked_trial_fraction},
        {"allow_tf32", o.allow_tf32},
        {"implausible_speedup", o.implausible_speedup},
        {"measure_eager", o.measure_eager},
        {"measure_compile", o.measure_compile},
        {"poison_memory", o.poison_memory},
        {"input_memory_fraction", o.input_memory_fraction},
        {"rss_limit_bytes", o.rss_limit_bytes},
        {"ncu_region", o.ncu_region}}},
  };
  return j.dump(1);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double hi = v[mid];
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + hi) / 2;
}

namespace {

Expected<HarnessResult> parse_result(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (text(j, "format") != kHarnessResultFormat) return bad("format is not a harness result");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int>() != kHarnessFormatVersion)
    return bad("unsupported version");
  HarnessResult out;
  out.ok = flag(j, "ok");
  out.passed = flag(j, "passed");
  out.device_fault = flag(j, "device_fault");
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    out.error =
        make_error(category_from(text(*e, "category")), text(*e, "code"), text(*e, "message"));
    if (out.error->code.empty()) out.error->code = "harness.error";
  }
  if (!out.ok && !out.error) return bad("ok is false but there is no error");
  BenchResult& r = out.result;
  if (auto c = j.find("checks"); c != j.end() && c->is_array()) {
    for (const auto& x : *c) {
      if (!x.is_object()) return bad("a check is not an object");
      BenchCheck check;
      check.name = text(x, "name");
      check.passed = flag(x, "passed");
      check.max_abs_error = number(x, "max_abs_error");
      check.max_rel_error = number(x, "max_rel_error");
      check.first_mismatch_index = static_cast<std::int64_t>(number(x, "first_mismatch_index", -1));
      check.message = text(x, "message");
      r.audit.checks_run.push_back(check.name);
      r.checks.push_back(std::move(check));
    }
  }
  if (auto v = j.find("violations"); v != j.end() && v->is_array()) {
    for (const auto& x : *v)
      if (x.is_object()) r.violations.push_back({text(x, "rule"), text(x, "detail")});
  }
  if (auto t = j.find("timing"); t != j.end() && t->is_object()) {
    r.candidate_trial_us = numbers(*t, "candidate_us");
    r.eager_trial_us = numbers(*t, "eager_us");
    r.compile_trial_us = numbers(*t, "compile_us");
    out.idle_overhead_us = number(*t, "idle_overhead_us");
    out.compile_baseline_error = text(*t, "compile_error");
    if (auto s = t->find("summary"); s != t->end() && s->is_object()) {
      for (auto it = s->begin(); it != s->end(); ++it) {
        if (!it->is_object()) continue;
        out.spreads[it.key()] = {number(*it, "median"), number(*it, "min"), number(*it, "max"),
                                 number(*it, "iqr"), number(*it, "cv")};
      }
    }
  }
  if (auto v = j.find("versions"); v != j.end() && v->is_object()) {
    r.audit.torch_version = text(*v, "torch");
    r.audit.gpu_name = text(*v, "gpu_name");
    r.audit.driver_version = text(*v, "driver");
    out.cuda_runtime = text(*v, "cuda_runtime_torch");
    out.sm_clock_max_mhz = static_cast<int>(number(*v, "sm_clock_max_mhz"));
    out.mem_clock_max_mhz = static_cast<int>(number(*v, "mem_clock_max_mhz"));
    // The clocks during the measurement when NVML answered, else the maximum clocks.
    r.audit.sm_clock_mhz =
        static_cast<std::uint32_t>(number(*v, "sm_clock_mhz", out.sm_clock_max_mhz));
    r.audit.mem_clock_mhz =
        static_cast<std::uint32_t>(number(*v, "mem_clock_mhz", out.mem_clock_max_mhz));
  }
  if (auto p = j.find("precision_flags"); p != j.end() && p->is_array()) {
    for (const auto& x : *p)
      if (x.is_string()) r.audit.precision_flags.push_back(x.get<std::string>());
  }
  if (auto b = j.find("breakdown_s"); b != j.end() && b->is_object()) {
    for (auto it = b->begin(); it != b->end(); ++it)
      if (it->is_number()) r.phases_s[it.key()] = it->get<double>();
  }
  if (auto n = j.find("notes"); n != j.end() && n->is_array()) {
    for (const auto& x : *n)
      if (x.is_string()) out.notes.push_back(x.get<std::string>());
  }
  if (auto s = j.find("seeds"); s != j.end() && s->is_array()) {
    for (const auto& x : *s)
      if (x.is_number_unsigned() || x.is_number_integer())
        out.seeds.push_back(x.get<std::uint64_t>());
  }
  r.profile_report = text(j, "profile_report");
  return out;
}

}  // namespace

Expected<HarnessResult> parse_harness_result(std::string_view json_text) {
  try {
    return parse_result(json_text);
  } catch (const std::exception& e) {  // nlohmann throws on some type mismatches
    return bad(e.what());
  }
}

}  // namespace cuda_agent
