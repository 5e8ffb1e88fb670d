// The agent's workspace of one episode (DESIGN.md section 4), in memory: the read-only model.py
// and the files the agent writes (kernels/*.cu|.cpp|.h|.cuh and model_new.py), with the file
// tools of DESIGN.md section 6. Nothing touches the disk: the compile farm and the bench get the
// files as a request, so an episode cannot reach the host's filesystem through a path.
//
//   Workspace w(task_source);
//   Expected<std::string> r = w.write_file("kernels/k.cu", text);   // an observation, or an Error
//
// Errors are kInvalidInput with code "workspace.*" and a message meant for the model (it is shown
// to it as the tool result): which path, what rule.
//
// Threading: one owner (the episode).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "messages/compile_codec.h"

namespace cuda_agent {

struct WorkspaceLimits {
  std::size_t max_file_bytes = 256 << 10;  ///< one file
  std::size_t max_files = 32;              ///< files the agent may create
  std::size_t max_read_bytes = 32 << 10;   ///< read_file shows at most this much
};

class Workspace {
 public:
  explicit Workspace(std::string model_py, WorkspaceLimits limits = {});

  Expected<std::string> list_files() const;
  Expected<std::string> read_file(const std::string& path) const;
  Expected<std::string> write_file(const std::string& path, const std::string& content);
  Expected<std::string> edit_file(const std::string& path, const std::string& old_text,
                                  const std::string& new_text);

  /// The agent's files (not model.py) in path order, as the compile farm takes them.
  std::vector<SourceFile> solution_files() const;
  const std::string& model_py() const { return model_py_; }
  bool has(const std::string& path) const { return files_.count(path) > 0; }
  /// Changes with every successful write or edit (to tell "nothing changed since" apart).
  std::uint64_t revision() const { return revision_; }

 private:
  Status check_writable(const std::string& path) const;
  std::string model_py_;
  WorkspaceLimits limits_;
  std::map<std::string, std::string> files_;
  std::uint64_t revision_ = 0;
};

}  // namespace cuda_agent
