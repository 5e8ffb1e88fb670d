#include "compile_farm/file_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace cuda_agent::compile_farm {
namespace fs = std::filesystem;
namespace {

Error io_error(const std::string& what, const std::string& path, int err) {
  return make_error(ErrorCategory::kIo, "compile.io",
                    what + " '" + path + "': " + std::strerror(err));
}

bool valid_key(std::string_view key) {
  return !key.empty() && key.size() <= 128 && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

Expected<std::string> read_regular_file(const std::string& path, std::int64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCategory::kIo, "compile.io", "'" + path + "' is not a regular file");
  }
  if (st.st_size > max_bytes) {
    ::close(fd);
    return make_error(ErrorCategory::kIo, "compile.io",
                      "'" + path + "' is " + std::to_string(st.st_size) + " bytes; at most " +
                          std::to_string(max_bytes) + " are read");
  }
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

Status write_file(const std::string& path, std::string_view bytes, unsigned mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return io_error("cannot create", path, errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = errno;
      ::close(fd);
      return io_error("cannot write", path, err);
    }
    done += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) return io_error("cannot write", path, errno);
  return Status();
}

FileCache::FileCache(std::string dir, std::int64_t budget_bytes)
    : dir_(std::move(dir)), budget_bytes_(budget_bytes) {}

Expected<std::unique_ptr<FileCache>> FileCache::open(std::string dir, std::int64_t budget_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create the cache directory", dir, ec.value());
  ::chmod(dir.c_str(), 0700);
  return std::unique_ptr<FileCache>(new FileCache(std::move(dir), budget_bytes));
}

std::optional<std::string> FileCache::get(std::string_view key) {
  if (budget_bytes_ <= 0 || !valid_key(key)) return std::nullopt;
  std::string path = dir_ + "/" + std::string(key);
  auto bytes = read_regular_file(path, budget_bytes_);
  if (!bytes) return std::nullopt;
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used now
  return std::move(*bytes);
}

Status FileCache::put(std::string_view key, std::string_view bytes) {
  if (budget_bytes_ <= 0 || static_cast<std::int64_t>(bytes.size()) > budget_bytes_)
    return Status();
  if (!valid_key(key))
    return make_error(ErrorCategory::kInternal, "compile.io",
                      "bad cache key '" + std::string(key) + "'");
  static std::atomic<std::uint64_t> counter{0};
  std::string tmp = dir_ + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  RETURN_IF_ERROR(write_file(tmp, bytes, 0600));
  std::string path = dir_ + "/" + std::string(key);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error("cannot store cache entry", path, err);
  }
  std::lock_guard lock(mu_);
  if (approx_bytes_ >= 0) approx_bytes_ += static_cast<std::int64_t>(bytes.size());
  if (approx_bytes_ < 0 || approx_bytes_ > budget_bytes_) evict_locked();
  return Status();
}

void FileCache::evict_locked() {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::int64_t bytes;
  };
  std::vector<Entry> entries;
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec)) continue;
    std::int64_t size = static_cast<std::int64_t>(e.file_size(ec));
    entries.push_back({e.path(), e.last_write_time(ec), size});
    total += size;
  }
  if (total > budget_bytes_) {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.used < b.used; });
    const std::int64_t target = budget_bytes_ - budget_bytes_ / 10;  // leave 10% headroom
    for (const Entry& e : entries) {
      if (total <= target) break;
      if (fs::remove(e.path, ec)) total -= e.bytes;
    }
  }
  approx_bytes_ = total;
}

}  // namespace cuda_agent::compile_farm
