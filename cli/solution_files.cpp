#include "cli/solution_files.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace cuda_agent::cli {
namespace fs = std::filesystem;

Expected<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return make_error(ErrorCategory::kNotFound, "cli.read", "cannot read '" + p.string() + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Expected<std::vector<SourceFile>> read_solution(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir / "kernels", ec))
    return make_error(ErrorCategory::kInvalidInput, "cli.solution",
                      "'" + dir.string() + "' has no kernels/ directory (DESIGN.md section 4)");
  std::vector<SourceFile> files;
  for (const auto& e : fs::directory_iterator(dir / "kernels", ec)) {
    if (!e.is_regular_file()) continue;
    ASSIGN_OR_RETURN(std::string content, read_text(e.path()));
    files.push_back({"kernels/" + e.path().filename().string(), std::move(content)});
  }
  if (fs::exists(dir / "model_new.py", ec)) {
    ASSIGN_OR_RETURN(std::string content, read_text(dir / "model_new.py"));
    files.push_back({"model_new.py", std::move(content)});
  }
  std::sort(files.begin(), files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  return files;
}

}  // namespace cuda_agent::cli
