#include "cli/solution_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "compile_farm/source_checks.h"
#include "core/unique_fd.h"

namespace cuda_agent::cli {
namespace fs = std::filesystem;

Expected<std::string> read_text(const fs::path& p) {
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCategory::kNotFound, "cli.read",
                      "cannot read '" + p.string() + "': " + why);
  };
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  std::string out;
  char buf[64 << 10];
  for (;;) {
    const ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno));
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Expected<std::vector<SourceFile>> read_solution(const fs::path& dir) {
  return compile_farm::read_solution_directory(dir.string());
}

}  // namespace cuda_agent::cli
