// Task ids, hashes and the JSON body (see task.h, docs/formats/tasks.md).
#include "tasks/task.h"

#include <sodium.h>

#include <nlohmann/json.hpp>

namespace cuda_agent {
namespace {

using nlohmann::json;

json value_to_json(const ValueSpec& v) {
  json j = {{"expr", v.expr}, {"kind", v.kind}};
  if (v.kind == "tensor") {
    j["factory"] = v.factory;
    j["shape"] = v.has_shape ? json(v.shape) : json(nullptr);
    j["dtype"] = v.dtype.empty() ? json(nullptr) : json(v.dtype);
  } else if (v.kind == "value") {
    j["value"] = json::parse(v.value_json, nullptr, false);
  }
  return j;
}

ValueSpec value_from_json(const json& j) {
  ValueSpec v;
  v.expr = j.at("expr").get<std::string>();
  v.kind = j.at("kind").get<std::string>();
  if (v.kind == "tensor") {
    v.factory = j.value("factory", "");
    if (j.contains("shape") && j["shape"].is_array()) {
      v.has_shape = true;
      v.shape = j["shape"].get<std::vector<std::int64_t>>();
    }
    if (j.contains("dtype") && j["dtype"].is_string()) v.dtype = j["dtype"].get<std::string>();
  } else if (j.contains("value")) {
    v.value_json = j["value"].dump();
  }
  return v;
}

std::vector<std::string> string_list(const json& j, const char* key) {
  return j.contains(key) ? j[key].get<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace

std::string task_content_hash(std::string_view source) {
  static const bool sodium_ready = sodium_init() >= 0;  // SHA-256 needs no keys; init is cheap
  (void)sodium_ready;
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(source.data()), source.size());
  static const char hex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned char b : digest) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

TaskId make_task_id(std::string_view suite, std::string_view name, std::string_view hash) {
  std::string clean;
  for (char c : name.substr(0, 80)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    clean.push_back(ok ? c : '_');
  }
  if (clean.empty()) clean = "task";
  std::string_view digits = hash;
  if (digits.substr(0, 7) == "sha256:") digits.remove_prefix(7);
  return TaskId{std::string(suite) + "/" + clean + "-" + std::string(digits.substr(0, 12))};
}

Task task_from_source(std::string suite, std::string name, std::string source,
                      const StaticReport& report, std::string data_source, std::string origin,
                      std::int64_t now_unix_ms) {
  Task t;
  t.content_hash = task_content_hash(source);
  t.id = make_task_id(suite, name, t.content_hash);
  t.suite = std::move(suite);
  t.name = std::move(name);
  t.source = std::move(source);
  t.data_source = std::move(data_source);
  t.origin = std::move(origin);
  t.ops = report.ops;
  t.imports = report.imports;
  t.init_params = report.init_params;
  t.forward_params = report.forward_params;
  t.init_inputs = report.init_inputs;
  t.inputs = report.inputs;
  std::string note;
  for (const std::string& w : report.warnings) note += (note.empty() ? "" : "; ") + w;
  t.filters.push_back({.filter = "static", .passed = true, .reason = note, .unix_ms = now_unix_ms});
  return t;
}

std::string encode_task(const Task& t) {
  json inputs = json::array(), init_inputs = json::array(), filters = json::array(),
       baselines = json::array();
  for (const ValueSpec& v : t.inputs) inputs.push_back(value_to_json(v));
  for (const ValueSpec& v : t.init_inputs) init_inputs.push_back(value_to_json(v));
  for (const FilterResult& f : t.filters) {
    filters.push_back(
        {{"filter", f.filter},
         {"passed", f.passed},
         {"reason", f.reason},
         {"unix_ms", f.unix_ms},
         {"details",
          f.details_json.empty() ? json(nullptr) : json::parse(f.details_json, nullptr, false)}});
  }
  for (const TaskBaseline& b : t.baselines) {
    baselines.push_back({{"device", b.device},
                         {"torch_version", b.torch_version},
                         {"precision", b.precision},
                         {"eager_ms", b.eager_ms},
                         {"compile_ms", b.compile_ms},
                         {"recorded_unix_ms", b.recorded_unix_ms}});
  }
  json j = {{"format", "cuda-agent task"},
            {"version", kTaskFormatVersion},
            {"id", t.id.value()},
            {"suite", t.suite},
            {"name", t.name},
            {"content_hash", t.content_hash},
            {"data_source", t.data_source},
            {"origin", t.origin},
            {"ops", t.ops},
            {"declared_ops", t.declared_ops},
            {"imports", t.imports},
            {"init_params", t.init_params},
            {"forward_params", t.forward_params},
            {"init_inputs", init_inputs},
            {"inputs", inputs},
            {"filters", filters},
            {"baselines", baselines},
            {"source", t.source}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Expected<Task> decode_task(std::string_view body, std::string_view where) {
  auto corrupt = [&](const std::string& why) {
    return make_error(ErrorCategory::kIo, "task.corrupt",
                      std::string(where) + ": not a readable task: " + why);
  };
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return corrupt("not a JSON object");
  if (j.value("format", "") != "cuda-agent task")
    return corrupt("no \"format\": \"cuda-agent task\"");
  if (!j.contains("version") || !j["version"].is_number_integer()) return corrupt("no version");
  const int version = j["version"].get<int>();
  if (version > kTaskFormatVersion) {
    return make_error(ErrorCategory::kInvalidInput, "task.newer_version",
                      std::string(where) + ": task format version " + std::to_string(version) +
                          " is newer than this build reads (" + std::to_string(kTaskFormatVersion) +
                          ")");
  }
  try {
    Task t;
    t.id = TaskId{j.at("id").get<std::string>()};
    t.suite = j.at("suite").get<std::string>();
    t.name = j.at("name").get<std::string>();
    t.content_hash = j.at("content_hash").get<std::string>();
    t.source = j.at("source").get<std::string>();
    t.data_source = j.value("data_source", "");
    t.origin = j.value("origin", "");
    t.ops = string_list(j, "ops");
    t.declared_ops = string_list(j, "declared_ops");
    t.imports = string_list(j, "imports");
    t.init_params = string_list(j, "init_params");
    t.forward_params = string_list(j, "forward_params");
    for (const json& v : j.value("init_inputs", json::array())) {
      t.init_inputs.push_back(value_from_json(v));
    }
    for (const json& v : j.value("inputs", json::array())) t.inputs.push_back(value_from_json(v));
    for (const json& f : j.value("filters", json::array())) {
      FilterResult r{.filter = f.at("filter").get<std::string>(),
                     .passed = f.at("passed").get<bool>(),
                     .reason = f.value("reason", ""),
                     .unix_ms = f.value("unix_ms", std::int64_t{0})};
      if (f.contains("details") && !f["details"].is_null()) r.details_json = f["details"].dump();
      t.filters.push_back(std::move(r));
    }
    for (const json& b : j.value("baselines", json::array())) {
      t.baselines.push_back({.device = b.at("device").get<std::string>(),
                             .torch_version = b.value("torch_version", ""),
                             .precision = b.value("precision", ""),
                             .eager_ms = b.value("eager_ms", 0.0),
                             .compile_ms = b.value("compile_ms", 0.0),
                             .recorded_unix_ms = b.value("recorded_unix_ms", std::int64_t{0})});
    }
    return t;
  } catch (const json::exception& e) {
    return corrupt(e.what());
  }
}

TaskRecord to_record(const Task& t, std::int64_t created_unix_ms) {
  return TaskRecord{.task_id = t.id,
                    .suite = t.suite,
                    .content_hash = t.content_hash,
                    .body = encode_task(t),
                    .created_unix_ms = created_unix_ms};
}

Expected<Task> from_record(const TaskRecord& record) {
  const std::string where = "task " + record.task_id.value();
  ASSIGN_OR_RETURN(Task t, decode_task(record.body, where));
  if (t.id != record.task_id || t.suite != record.suite || t.content_hash != record.content_hash) {
    return make_error(ErrorCategory::kIo, "task.corrupt",
                      where + ": the body's id, suite or hash differs from the record's");
  }
  if (task_content_hash(t.source) != t.content_hash) {
    return make_error(ErrorCategory::kIo, "task.corrupt",
                      where + ": the source does not match its content hash");
  }
  return t;
}

}  // namespace cuda_agent
