// Reading files the CLI is pointed at: a text file, and a solution (workspace) directory in the
// DESIGN.md section 4 layout (kernels/*, model_new.py). Shared by `compile` and `bench`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "messages/compile_codec.h"

namespace cuda_agent::cli {

/// The bytes of a file the caller named (a task's model.py): links are followed, since the caller
/// chose the path, but only a regular file is read (a fifo or device is cli.read, never opened for
/// reading in blocking mode). cli.read (not_found) when it cannot be read.
Expected<std::string> read_text(const std::filesystem::path& p);

/// kernels/* and model_new.py (when present) of a workspace directory, sorted by path, through
/// compile_farm::read_solution_directory: regular files inside the directory only (no links,
/// devices, fifos or hard links), errors solution.* (invalid_input) naming the file.
Expected<std::vector<SourceFile>> read_solution(const std::filesystem::path& dir);

}  // namespace cuda_agent::cli
