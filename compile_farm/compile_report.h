// The report of one compile, as `cuda-agent compile` prints it: text a kernel engineer reads, or
// JSON for tools (every field of CompileResult except the artifact's bytes).
#pragma once

#include <string>

#include "messages/compile_codec.h"

namespace cuda_agent {

std::string compile_report_text(const CompileResult& result);
/// One JSON object (pretty-printed when `indent` >= 0).
std::string compile_report_json(const CompileResult& result, int indent = 2);
/// {"ok": false, "error": {"category", "code", "message"}}
std::string compile_error_json(const Error& error, int indent = 2);

}  // namespace cuda_agent
