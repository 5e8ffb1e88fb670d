#include "rollout/workspace.h"

#include <regex>

namespace cuda_agent {
namespace {

Error refused(const std::string& code, const std::string& message) {
  return make_error(ErrorCategory::kInvalidInput, "workspace." + code, message);
}

}  // namespace

Workspace::Workspace(std::string model_py, WorkspaceLimits limits)
    : model_py_(std::move(model_py)), limits_(limits) {}

Status Workspace::check_writable(const std::string& path) const {
  static const std::regex kAllowed(R"(kernels/[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\.(cu|cpp|h|cuh))");
  if (path == "model.py") return refused("read_only", "model.py is the reference and read-only");
  if (path != "model_new.py" && !std::regex_match(path, kAllowed))
    return refused("path",
                   "cannot write '" + path +
                       "': the agent writes model_new.py and kernels/<name>.cu|.cpp|.h|.cuh "
                       "(letters, digits, _ . -; no subdirectories)");
  return {};
}

Expected<std::string> Workspace::list_files() const {
  std::string out = "model.py (" + std::to_string(model_py_.size()) + " bytes, read-only)\n";
  for (const auto& [path, content] : files_)
    out += path + " (" + std::to_string(content.size()) + " bytes)\n";
  return out;
}

Expected<std::string> Workspace::read_file(const std::string& path) const {
  const std::string* content = nullptr;
  if (path == "model.py") content = &model_py_;
  if (auto it = files_.find(path); it != files_.end()) content = &it->second;
  if (!content) return refused("not_found", "no file '" + path + "' (list_files shows them)");
  if (content->size() <= limits_.max_read_bytes) return *content;
  return content->substr(0, limits_.max_read_bytes) + "\n[... " +
         std::to_string(content->size() - limits_.max_read_bytes) + " more bytes not shown]";
}

Expected<std::string> Workspace::write_file(const std::string& path, const std::string& content) {
  RETURN_IF_ERROR(check_writable(path));
  if (content.size() > limits_.max_file_bytes)
    return refused("too_large", path + " is " + std::to_string(content.size()) +
                                    " bytes; the limit is " +
                                    std::to_string(limits_.max_file_bytes));
  if (!files_.count(path) && files_.size() >= limits_.max_files)
    return refused("too_many",
                   "the workspace holds at most " + std::to_string(limits_.max_files) + " files");
  const bool existed = files_.count(path) > 0;
  files_[path] = content;
  ++revision_;
  return (existed ? "replaced " : "wrote ") + path + " (" + std::to_string(content.size()) +
         " bytes)";
}

Expected<std::string> Workspace::edit_file(const std::string& path, const std::string& old_text,
                                           const std::string& new_text) {
  RETURN_IF_ERROR(check_writable(path));
  auto it = files_.find(path);
  if (it == files_.end()) return refused("not_found", "no file '" + path + "' to edit");
  if (old_text.empty()) return refused("edit", "`old` is empty; give the exact text to replace");
  const std::size_t at = it->second.find(old_text);
  if (at == std::string::npos)
    return refused("edit", "`old` does not occur in " + path + " (it must match exactly)");
  if (it->second.find(old_text, at + 1) != std::string::npos)
    return refused("edit", "`old` occurs more than once in " + path +
                               "; include more context so it is unique");
  std::string updated = it->second;
  updated.replace(at, old_text.size(), new_text);
  if (updated.size() > limits_.max_file_bytes)
    return refused("too_large", "the edit makes " + path + " larger than the limit");
  it->second = std::move(updated);
  ++revision_;
  const auto line = 1 + std::count(it->second.begin(), it->second.begin() + at, '\n');
  return "edited " + path + " at line " + std::to_string(line);
}

std::vector<SourceFile> Workspace::solution_files() const {
  std::vector<SourceFile> out;
  for (const auto& [path, content] : files_) out.push_back({path, content});
  return out;
}

}  // namespace cuda_agent
