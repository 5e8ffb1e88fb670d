#include "core/log.h"

#include "core/escape.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace cuda_agent {
namespace {

std::mutex g_mutex;  // guards g_setup against concurrent setup/reads
LogSetup g_setup;

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  }
  return false;
}

void append_field(std::string& out, bool json, std::string_view key, std::string_view value) {
  if (json) {
    out += ",\"";
    append_escaped(out, key);
    out += "\":\"";
    append_escaped(out, value);
    out += '"';
    return;
  }
  out += ' ';
  out += key;
  out += '=';
  if (needs_quotes(value)) {
    out += '"';
    append_escaped(out, value);
    out += '"';
  } else {
    out += value;
  }
}

void emit(spdlog::level::level_enum level, std::string_view message, LogFields fields) {
  LogSetup setup;
  {
    std::lock_guard lock(g_mutex);
    setup = g_setup;
  }
  spdlog::log(level, "{}", format_log_fields(setup.format, setup.context, message, fields));
}

}  // namespace

std::string format_log_fields(std::string_view format, const LogContext& context,
                              std::string_view message, LogFields fields) {
  const bool json = format == "json";
  std::string out;
  if (!context.run.empty()) append_field(out, json, "run", context.run);
  if (!context.role.empty()) append_field(out, json, "role", context.role);
  if (!context.worker.empty()) append_field(out, json, "worker", context.worker);
  append_field(out, json, "msg", message);
  for (const auto& [k, v] : fields) append_field(out, json, k, v);
  // Both formats build ", key=..." / ",\"key\":..." pieces; drop the leading separator.
  if (!out.empty()) out.erase(0, 1);
  return out;
}

Status setup_logging(const LogSetup& setup) {
  auto level = spdlog::level::from_str(setup.level);
  if (level == spdlog::level::off && setup.level != "off") {
    return make_error(
        ErrorCategory::kInvalidInput, "log.bad_level",
        "unknown log level '" + setup.level + "' (expected trace, debug, info, warn or error)");
  }
  if (setup.format != "text" && setup.format != "json") {
    return make_error(ErrorCategory::kInvalidInput, "log.bad_format",
                      "unknown log format '" + setup.format + "' (expected text or json)");
  }
  {
    std::lock_guard lock(g_mutex);
    g_setup = setup;
  }
  spdlog::drop("cuda-agent");
  auto logger = spdlog::stderr_color_mt("cuda-agent");
  spdlog::set_default_logger(logger);
  spdlog::set_level(level);
  if (setup.format == "json") {
    spdlog::set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%e","level":"%l",%v})");
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  return Status::ok();
}

void log_debug(std::string_view message, LogFields fields) {
  emit(spdlog::level::debug, message, fields);
}
void log_info(std::string_view message, LogFields fields) {
  emit(spdlog::level::info, message, fields);
}
void log_warn(std::string_view message, LogFields fields) {
  emit(spdlog::level::warn, message, fields);
}
void log_error(std::string_view message, LogFields fields) {
  emit(spdlog::level::err, message, fields);
}
void log_error(const Error& error, LogFields fields) {
  LogSetup setup;
  {
    std::lock_guard lock(g_mutex);
    setup = g_setup;
  }
  const bool json = setup.format == "json";
  std::string line = format_log_fields(setup.format, setup.context, error.message, fields);
  append_field(line, json, "category", to_string(error.category));
  append_field(line, json, "code", error.code);
  spdlog::log(spdlog::level::err, "{}", line);
}

}  // namespace cuda_agent
