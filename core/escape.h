// String escaping shared by the JSON log lines (core/log.cpp) and the TOML writer
// (cluster/manifest_render.cpp): JSON strings and TOML basic strings escape the same way.
#pragma once

#include <string>
#include <string_view>

namespace cuda_agent {

/// Appends `value` to `out` with `"`, `\`, and control characters (U+0000..U+001F, U+007F)
/// escaped as \" \\ \n \t \r or \u00XX; no surrounding quotes. Valid inside a JSON string and a
/// TOML basic string.
void append_escaped(std::string& out, std::string_view value);

}  // namespace cuda_agent
