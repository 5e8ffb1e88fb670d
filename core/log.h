// One logging setup for every process and command: spdlog underneath, structured key=value
// fields on every line. The process context (run, role, worker) is set once at start-up and
// printed on every line; per-event keys (request, task, ...) are passed with the event.
//
//   setup_logging({.level = "info", .format = "text", .context = {.run = "r1", .role = "bench"}});
//   log_info("request done", {{"request", id.value()}, {"ms", std::to_string(ms)}});
//
// text:  2026-12-02T14:00:00.123 info run=r1 role=bench msg="request done" request=r-9 ms=12
// json:  {"ts":"2026-12-02T14:00:00.123","level":"info","run":"r1","role":"bench",
//         "msg":"request done","request":"r-9","ms":"12"}
//
// Threading: setup_logging is called once from main before other threads start; the log_*
// functions are safe from any thread. Logs go to stderr; stdout is kept for command output.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace cuda_agent {

/// Who is logging: printed on every line (empty keys are left out).
struct LogContext {
  std::string run;
  std::string role;
  std::string worker;
};

struct LogSetup {
  /// trace, debug, info, warn or error. Default: info.
  std::string level = "info";
  /// text (one human-readable line per event) or json (one object per line). Default: text.
  std::string format = "text";
  LogContext context;
};

/// Configures the process-wide logger. Fails on an unknown level or format.
Status setup_logging(const LogSetup& setup);

using LogFields = std::initializer_list<std::pair<std::string_view, std::string_view>>;

void log_debug(std::string_view message, LogFields fields = {});
void log_info(std::string_view message, LogFields fields = {});
void log_warn(std::string_view message, LogFields fields = {});
void log_error(std::string_view message, LogFields fields = {});
/// Logs an Error at error level with its category and code as fields.
void log_error(const Error& error, LogFields fields = {});

/// The formatted body of a line (everything after timestamp and level); exposed for tests.
std::string format_log_fields(std::string_view format, const LogContext& context,
                              std::string_view message, LogFields fields);

}  // namespace cuda_agent
