// Batches sources through the validator script (see python_validator.h).
#include "tasks/python_validator.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace cuda_agent {
namespace {

using nlohmann::json;

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& s : *it) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

std::vector<ValueSpec> values(const json& j, const char* key) {
  std::vector<ValueSpec> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& v : *it) {
    if (!v.is_object()) continue;
    ValueSpec s;
    s.expr = v.value("expr", "");
    s.kind = v.value("kind", "value");
    if (s.kind == "tensor") {
      s.factory = v.value("factory", "");
      if (v.contains("dtype") && v["dtype"].is_string()) s.dtype = v["dtype"].get<std::string>();
      if (v.contains("shape") && v["shape"].is_array()) {
        s.has_shape = true;
        for (const json& d : v["shape"]) {
          if (d.is_number_integer()) s.shape.push_back(d.get<std::int64_t>());
        }
      }
    } else if (v.contains("value")) {
      s.value_json = v["value"].dump();
    }
    out.push_back(std::move(s));
  }
  return out;
}

StaticReport failed(std::string why) {
  StaticReport r;
  r.errors.push_back(std::move(why));
  return r;
}

}  // namespace

Expected<StaticReport> parse_validator_answer(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) {
    return make_error(ErrorCategory::kInternal, "task.validator_answer",
                      "the validator answered something that is not a report: " +
                          std::string(line.substr(0, 200)));
  }
  StaticReport r;
  r.ok = j["ok"].get<bool>();
  r.errors = strings(j, "errors");
  r.warnings = strings(j, "warnings");
  r.imports = strings(j, "imports");
  r.ops = strings(j, "ops");
  r.init_params = strings(j, "init_params");
  r.forward_params = strings(j, "forward_params");
  r.init_inputs = values(j, "init_inputs");
  r.inputs = values(j, "inputs");
  if (!r.ok && r.errors.empty()) r.errors.push_back("rejected without a reason");
  return r;
}

PythonValidator::PythonValidator(ValidatorOptions options) : options_(std::move(options)) {}

Expected<std::vector<StaticReport>> PythonValidator::check(
    const std::vector<SourceToCheck>& sources, const std::function<void(bool ok)>& progress) const {
  std::vector<StaticReport> reports;
  reports.reserve(sources.size());
  auto deliver = [&](StaticReport r) {
    if (progress) progress(r.ok);
    reports.push_back(std::move(r));
  };
  const std::size_t batch = std::max<std::size_t>(1, options_.batch_files);
  ChildSpec spec{.argv = {options_.python, "-I", "-c", validator_script()},
                 .limits = options_.limits,
                 .first_line_timeout_ms = options_.first_answer_timeout_ms,
                 .next_line_timeout_ms = options_.per_file_timeout_ms};
  // A probe with no input: a broken interpreter fails the call once, instead of being blamed
  // on every source in turn.
  ASSIGN_OR_RETURN(ChildRun probe, run_line_child(spec, "", [](std::string_view) {}));
  if (probe.exit_code != 0) {
    return make_error(ErrorCategory::kUnavailable, "task.validator_broken",
                      "the task validator (" + options_.python + " -I) " + probe.describe());
  }
  std::size_t next = 0;
  while (next < sources.size()) {
    const std::size_t end = std::min(sources.size(), next + batch);
    std::string input;
    for (std::size_t i = next; i < end; ++i) {
      // Bytes that are not UTF-8 are replaced (U+FFFD): callers reject such files before this,
      // and the script then reports the replacement as a syntax error rather than crashing.
      input += json({{"name", sources[i].name}, {"source", sources[i].source}})
                   .dump(-1, ' ', false, json::error_handler_t::replace);
      input += '\n';
    }
    auto run = run_line_child(spec, input, [&](std::string_view line) {
      if (next >= end) return;  // more answers than requests: ignored
      auto r = parse_validator_answer(line);
      deliver(r ? std::move(r).value() : failed(r.error().message));
      ++next;
    });
    if (!run) return run.error();
    if (next < end) {
      // The child stopped answering at sources[next]: that one is blamed, the rest retried.
      deliver(failed("the validator " + run->describe() + " while checking this file"));
      ++next;
    }
  }
  return reports;
}

}  // namespace cuda_agent
