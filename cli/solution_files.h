// Reading files the CLI is pointed at: a text file, and a solution (workspace) directory in the
// DESIGN.md section 4 layout (kernels/*, model_new.py). Shared by `compile` and `bench`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "messages/compile_codec.h"

namespace cuda_agent::cli {

/// The file's bytes, or cli.read (not_found).
Expected<std::string> read_text(const std::filesystem::path& p);

/// kernels/* and model_new.py (when present) of a workspace directory, sorted by path;
/// cli.solution (invalid_input) when there is no kernels/ directory.
Expected<std::vector<SourceFile>> read_solution(const std::filesystem::path& dir);

}  // namespace cuda_agent::cli
