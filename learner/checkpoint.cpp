#include "learner/checkpoint.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/content_hash.h"
#include "core/log.h"
#include "core/unique_fd.h"
#include "model/torch_compat.h"

namespace cuda_agent {
namespace fs = std::filesystem;
namespace {

constexpr const char* kChecksumsName = "CHECKSUMS";
constexpr const char* kChecksumsHeader = "# cuda-agent checkpoint v1 blake2b-256 of 64 MiB pieces";
constexpr const char* kDigestsDir = ".digests";  // sidecars of add_* files until seal()
constexpr const char* kTrainerStateName = "trainer_state.json";
constexpr const char* kTrainerStateFormat = "cuda-agent-trainer-state/1";
constexpr std::size_t kChunkBytes = std::size_t{8} << 20;
constexpr std::size_t kDigestBytes = 32;

Error io_error(const std::string& what, int err) {
  return make_error(ErrorCategory::kIo, "checkpoint.io", what + ": " + std::strerror(err));
}
Error bad(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "checkpoint.bad", what);
}
Error torch_failure(const std::string& what, const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  return make_error(ErrorCategory::kInternal, "checkpoint.torch",
                    what + ": " + (c10 ? c10->what_without_backtrace() : e.what()));
}

std::string hex_of(const unsigned char* bytes, std::size_t n) {
  std::string out(n * 2, '0');
  sodium_bin2hex(out.data(), out.size() + 1, bytes, n);
  return out;
}

// The digest of a file: BLAKE2b-256 over the BLAKE2b-256 digests of its 64 MiB pieces, in
// order (the last piece may be shorter; an empty file has no pieces). Pieces hash on several
// cores at once; a single BLAKE2b stream runs at ~0.6 GB/s, below a node's disks.
constexpr std::size_t kPieceBytes = std::size_t{64} << 20;

std::size_t hash_threads() {
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
}

std::string combine_pieces(const std::vector<std::array<unsigned char, kDigestBytes>>& pieces) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kDigestBytes);
  for (const auto& d : pieces) crypto_generichash_update(&state, d.data(), d.size());
  unsigned char digest[kDigestBytes];
  crypto_generichash_final(&state, digest, sizeof digest);
  return hex_of(digest, sizeof digest);
}

// One piece given as byte ranges (which stay valid until it is hashed).
std::array<unsigned char, kDigestBytes> hash_piece(
    const std::vector<std::pair<const unsigned char*, std::size_t>>& parts) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kDigestBytes);
  for (const auto& [p, n] : parts) crypto_generichash_update(&state, p, n);
  std::array<unsigned char, kDigestBytes> d{};
  crypto_generichash_final(&state, d.data(), d.size());
  return d;
}

// A file being written: writeback is started every chunk so the disk works while the CPU
// hashes, each completed piece is hashed on a helper thread, and finish() fsyncs. The bytes
// passed to write() must stay valid until finish() returns.
class FileWriter {
 public:
  ~FileWriter() { wait_all(); }
  Status open(const std::string& path) {
    path_ = path;
    fd_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd_.fd < 0) return io_error(path + ": open", errno);
    return Status::ok();
  }
  Status write(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (n > 0) {
      const std::size_t chunk = std::min({n, kChunkBytes, kPieceBytes - piece_fill_});
      std::size_t done = 0;
      while (done < chunk) {
        const ssize_t w = ::write(fd_.fd, p + done, chunk - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return io_error(path_ + ": write", errno);
        done += static_cast<std::size_t>(w);
      }
      ::sync_file_range(fd_.fd, static_cast<off64_t>(size_), static_cast<off64_t>(chunk),
                        SYNC_FILE_RANGE_WRITE);
      piece_.emplace_back(p, chunk);
      piece_fill_ += chunk;
      size_ += chunk;
      p += chunk;
      n -= chunk;
      if (piece_fill_ == kPieceBytes) submit_piece();
    }
    return Status::ok();
  }
  /// fsync + close; then digest() and size() are final.
  Status finish() {
    if (piece_fill_ > 0) submit_piece();
    wait_all();
    if (::fsync(fd_.fd) != 0) return io_error(path_ + ": fsync", errno);
    if (::close(fd_.fd) != 0) {
      fd_.fd = -1;
      return io_error(path_ + ": close", errno);
    }
    fd_.fd = -1;
    digest_ = combine_pieces(digests_);
    return Status::ok();
  }
  const std::string& digest() const { return digest_; }
  std::uint64_t size() const { return size_; }

 private:
  void submit_piece() {
    if (pending_.size() >= hash_threads()) collect_oldest();
    pending_.push_back(std::async(std::launch::async, hash_piece, std::move(piece_)));
    piece_.clear();
    piece_fill_ = 0;
  }
  void collect_oldest() {
    digests_.push_back(pending_.front().get());
    pending_.pop_front();
  }
  void wait_all() {
    while (!pending_.empty()) collect_oldest();
  }

  std::string path_;
  UniqueFd fd_;
  std::vector<std::pair<const unsigned char*, std::size_t>> piece_;
  std::size_t piece_fill_ = 0;
  std::deque<std::future<std::array<unsigned char, kDigestBytes>>> pending_;
  std::vector<std::array<unsigned char, kDigestBytes>> digests_;
  std::uint64_t size_ = 0;
  std::string digest_;
};

struct FileSum {
  std::string digest;
  std::uint64_t size = 0;
};

// Reads `path` whole, its pieces on several threads: its digest and size. With `sync`, also
// starts its writeback first and fsyncs it after (a file written by other code that seal()
// must make durable).
Expected<FileSum> hash_file(const std::string& path, bool sync) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) return io_error(path + ": open", errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return io_error(path + ": stat", errno);
  if (sync) ::sync_file_range(fd.fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  FileSum sum;
  sum.size = static_cast<std::uint64_t>(st.st_size);
  const std::size_t pieces = (sum.size + kPieceBytes - 1) / kPieceBytes;
  std::vector<std::array<unsigned char, kDigestBytes>> digests(pieces);
  std::atomic<std::size_t> next{0};
  std::atomic<int> failed{0};
  auto work = [&] {
    std::vector<unsigned char> buf(kChunkBytes);
    for (std::size_t i; (i = next.fetch_add(1)) < pieces && failed == 0;) {
      crypto_generichash_state state;
      crypto_generichash_init(&state, nullptr, 0, kDigestBytes);
      const std::uint64_t begin = i * kPieceBytes;
      const std::uint64_t end = std::min<std::uint64_t>(begin + kPieceBytes, sum.size);
      for (std::uint64_t off = begin; off < end;) {
        const ssize_t r = ::pread(fd.fd, buf.data(), std::min<std::uint64_t>(buf.size(), end - off),
                                  static_cast<off_t>(off));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          failed = r < 0 ? errno : EIO;  // 0: the file shrank while it was read
          break;
        }
        crypto_generichash_update(&state, buf.data(), static_cast<std::size_t>(r));
        off += static_cast<std::uint64_t>(r);
      }
      crypto_generichash_final(&state, digests[i].data(), kDigestBytes);
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(pieces, hash_threads()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failed != 0) return io_error(path + ": read", failed);
  if (sync && ::fsync(fd.fd) != 0) return io_error(path + ": fsync", errno);
  sum.digest = combine_pieces(digests);
  return sum;
}

Status fsync_dir(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0) return io_error(path + ": open directory", errno);
  if (::fsync(fd.fd) != 0) return io_error(path + ": fsync directory", errno);
  return Status::ok();
}

// Runs fn(i) for i in [0, n) on up to `threads` threads; returns the first error.
template <class Fn>
Status parallel_for_each(std::size_t n, Fn fn) {
  const std::size_t threads =
      std::min<std::size_t>(n, std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8));
  std::vector<Status> results(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) results[i] = fn(i);
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& r : results) RETURN_IF_ERROR(r);
  return Status::ok();
}

// "dir/" and "dir" name the same directory; paths built from it have one separator.
std::string clean_dir(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}

Status check_name(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\n') != std::string::npos ||
      name == kChecksumsName) {
    return bad("checkpoint file name '" + name + "' is not allowed");
  }
  for (const auto& part : fs::path(name)) {
    const std::string s = part.string();
    if (s.empty() || s.front() == '.') {
      return bad("checkpoint file name '" + name + "': components may not start with '.'");
    }
  }
  return Status::ok();
}

// ".tmp-step-00000012-4242..." -> 12 (any suffix after the dash); "step-00000012" -> 12.
std::optional<std::uint64_t> parse_step(const std::string& name, std::string_view prefix,
                                        bool need_dash) {
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::size_t i = prefix.size(), start = i;
  std::uint64_t v = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') v = v * 10 + (name[i++] - '0');
  if (i - start < 8 || i - start > 19) return std::nullopt;
  if (need_dash ? (i >= name.size() || name[i] != '-') : i != name.size()) return std::nullopt;
  return v;
}
std::optional<std::uint64_t> staging_step(const std::string& name) {
  return parse_step(name, ".tmp-step-", true);
}

std::string sidecar_path(const std::string& staging, const std::string& name) {
  return staging + "/" + kDigestsDir + "/" + content_hash(name).substr(0, 32);
}

// Removes `dir` whole; first renamed to a .tmp-* name (fsynced) so that a crash part-way
// through never leaves a damaged directory under a checkpoint's name.
Status remove_dir(const std::string& root, const std::string& dir, std::uint64_t step) {
  std::error_code ec;
  std::string target = dir;
  const std::string name = fs::path(dir).filename().string();
  if (!staging_step(name)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ".tmp-step-%08llu-rm%d", static_cast<unsigned long long>(step),
                  static_cast<int>(::getpid()));
    target = root + "/" + buf;
    fs::remove_all(target, ec);
    if (::rename(dir.c_str(), target.c_str()) != 0) return io_error(dir + ": rename", errno);
    RETURN_IF_ERROR(fsync_dir(root));
  }
  fs::remove_all(target, ec);
  if (ec) return make_error(ErrorCategory::kIo, "checkpoint.io", target + ": " + ec.message());
  return Status::ok();
}

// Removes .tmp-step-* directories of steps below `below` under root.
void remove_stale_staging(const std::string& root, std::uint64_t below) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    auto step = staging_step(e.path().filename().string());
    if (!step || *step >= below) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    log_info("checkpoint: removed a stale staging directory", {{"path", e.path().string()}});
  }
}

Expected<StDtype> st_dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return StDtype::kF32;
    case at::kHalf: return StDtype::kF16;
    case at::kBFloat16: return StDtype::kBF16;
    case at::kDouble: return StDtype::kF64;
    case at::kLong: return StDtype::kI64;
    case at::kInt: return StDtype::kI32;
    case at::kShort: return StDtype::kI16;
    case at::kChar: return StDtype::kI8;
    case at::kByte: return StDtype::kU8;
    case at::kBool: return StDtype::kBool;
    default: return bad(std::string("no safetensors dtype for ") + c10::toString(t));
  }
}
at::ScalarType torch_dtype_of(StDtype t) {
  switch (t) {
    case StDtype::kF32: return at::kFloat;
    case StDtype::kF16: return at::kHalf;
    case StDtype::kBF16: return at::kBFloat16;
    case StDtype::kF64: return at::kDouble;
    case StDtype::kI64: return at::kLong;
    case StDtype::kI32: return at::kInt;
    case StDtype::kI16: return at::kShort;
    case StDtype::kI8: return at::kChar;
    case StDtype::kU8: return at::kByte;
    case StDtype::kBool: return at::kBool;
  }
  return at::kByte;
}

std::string generator_hex(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  at::Tensor s = gen.get_state().contiguous();
  return hex_of(static_cast<const unsigned char*>(s.data_ptr()),
                static_cast<std::size_t>(s.numel()));
}

Status set_generator(at::Generator gen, const std::string& hex, const std::string& what) {
  if (hex.size() % 2 != 0) return bad("rng state '" + what + "' is not hex");
  at::Tensor s = at::empty({static_cast<std::int64_t>(hex.size() / 2)}, at::kByte);
  std::size_t len = 0;
  if (sodium_hex2bin(static_cast<unsigned char*>(s.data_ptr()), hex.size() / 2, hex.data(),
                     hex.size(), nullptr, &len, nullptr) != 0 ||
      len != hex.size() / 2) {
    return bad("rng state '" + what + "' is not hex");
  }
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(s);
  return Status::ok();
}

}  // namespace

std::string checkpoint_dir_name(std::uint64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08llu", static_cast<unsigned long long>(step));
  return buf;
}

std::string optimizer_file_name(std::string_view prefix, int rank) {
  std::string out(prefix);
  if (!out.empty()) out += '-';
  return out + "optimizer-rank-" + std::to_string(rank) + ".safetensors";
}

nlohmann::json capture_rng_state() {
  nlohmann::json rng = {{"cpu", generator_hex(at::detail::getDefaultCPUGenerator())},
                        {"cuda", nlohmann::json::array()}};
  if (torch::cuda::is_available()) {
    for (std::size_t i = 0; i < torch::cuda::device_count(); ++i) {
      rng["cuda"].push_back(generator_hex(at::globalContext().defaultGenerator(
          at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(i)))));
    }
  }
  return rng;
}

Status restore_rng_state(const nlohmann::json& rng) {
  try {
    if (!rng.is_object() || !rng.contains("cpu") || !rng["cpu"].is_string()) {
      return bad("rng state has no \"cpu\" string");
    }
    RETURN_IF_ERROR(
        set_generator(at::detail::getDefaultCPUGenerator(), rng["cpu"].get<std::string>(), "cpu"));
    if (rng.contains("cuda") && rng["cuda"].is_array() && !rng["cuda"].empty()) {
      const std::size_t have = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
      if (rng["cuda"].size() > have) {
        return bad("rng state has " + std::to_string(rng["cuda"].size()) +
                   " CUDA generators, this process has " + std::to_string(have) + " devices");
      }
      for (std::size_t i = 0; i < rng["cuda"].size(); ++i) {
        RETURN_IF_ERROR(set_generator(at::globalContext().defaultGenerator(
                                          at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(i))),
                                      rng["cuda"][i].get<std::string>(),
                                      "cuda:" + std::to_string(i)));
      }
    }
    return Status::ok();
  } catch (const std::exception& e) {
    return torch_failure("restoring the rng state", e);
  }
}

// ---- writing ----

Expected<CheckpointStaging> CheckpointStaging::begin(const std::string& root_in,
                                                     std::uint64_t step) {
  const std::string root = clean_dir(root_in);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return make_error(ErrorCategory::kIo, "checkpoint.io", root + ": " + ec.message());
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (staging_step(e.path().filename().string()) == step) {
      std::error_code rm;
      fs::remove_all(e.path(), rm);
    }
  }
  char name[64];
  std::snprintf(name, sizeof name, ".tmp-step-%08llu-%d", static_cast<unsigned long long>(step),
                static_cast<int>(::getpid()));
  const std::string path = root + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) return io_error(path + ": mkdir", errno);
  if (::mkdir((path + "/" + kDigestsDir).c_str(), 0755) != 0) {
    return io_error(path + "/" + kDigestsDir + ": mkdir", errno);
  }
  RETURN_IF_ERROR(fsync_dir(root));
  return CheckpointStaging(root, path, step);
}

Expected<CheckpointStaging> CheckpointStaging::attach(const std::string& root_in,
                                                      std::uint64_t step) {
  const std::string root = clean_dir(root_in);
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (staging_step(name) != step) continue;
    const std::string pid = name.substr(name.find('-', 10) + 1);  // after ".tmp-step-<digits>-"
    if (!pid.empty() &&
        std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      found.push_back(e.path().string());
    }
  }
  if (found.size() != 1) {
    return make_error(ErrorCategory::kNotFound, "checkpoint.no_staging",
                      root + ": " + std::to_string(found.size()) +
                          " staging directories for step " + std::to_string(step) +
                          " (expected one, made by rank 0's begin())");
  }
  return CheckpointStaging(root, found[0], step);
}

Expected<std::string> CheckpointStaging::subdir(const std::string& name) const {
  RETURN_IF_ERROR(check_name(name));
  std::error_code ec;
  fs::create_directories(path_ + "/" + name, ec);
  if (ec) return make_error(ErrorCategory::kIo, "checkpoint.io", name + ": " + ec.message());
  return path_ + "/" + name;
}

namespace {
// Writes one file of a staging directory through `body(writer)` and records its sidecar.
template <class Body>
Status write_staged(const std::string& staging, const std::string& name, Body body) {
  RETURN_IF_ERROR(check_name(name));
  const fs::path target = fs::path(staging) / name;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec)
    return make_error(ErrorCategory::kIo, "checkpoint.io", target.string() + ": " + ec.message());
  FileWriter w;
  RETURN_IF_ERROR(w.open(target.string()));
  RETURN_IF_ERROR(body(w));
  RETURN_IF_ERROR(w.finish());
  const std::string line = w.digest() + " " + std::to_string(w.size()) + " " + name + "\n";
  FileWriter side;
  RETURN_IF_ERROR(side.open(sidecar_path(staging, name)));
  RETURN_IF_ERROR(side.write(line.data(), line.size()));
  return side.finish();
}
}  // namespace

Status CheckpointStaging::add_file(const std::string& name, std::string_view bytes) const {
  return write_staged(path_, name,
                      [&](FileWriter& w) { return w.write(bytes.data(), bytes.size()); });
}

Status CheckpointStaging::add_safetensors(
    const std::string& name, const std::vector<SafetensorsWriteTensor>& tensors,
    const std::map<std::string, std::string>& metadata) const {
  // Outlives the writer: FileWriter hashes the bytes it was given later.
  Expected<SafetensorsLayout> layout = safetensors_layout(name, tensors, metadata);
  if (!layout)
    return make_error(ErrorCategory::kInternal, "checkpoint.bad_tensor", layout.error().message);
  return write_staged(path_, name, [&](FileWriter& w) -> Status {
    RETURN_IF_ERROR(w.write(layout->length.data(), 8));
    RETURN_IF_ERROR(w.write(layout->header.data(), layout->header.size()));
    for (const auto* t : layout->order) RETURN_IF_ERROR(w.write(t->data, t->bytes));
    return Status::ok();
  });
}

Status CheckpointStaging::add_tensors(const std::string& name,
                                      const std::map<std::string, at::Tensor>& tensors,
                                      const std::map<std::string, std::string>& metadata) const {
  try {
    std::vector<at::Tensor> keep;
    std::vector<SafetensorsWriteTensor> out;
    for (const auto& [key, t] : tensors) {
      ASSIGN_OR_RETURN(StDtype dtype, st_dtype_of(t.scalar_type()));
      at::Tensor cpu = t.detach().to(at::kCPU).contiguous();
      keep.push_back(cpu);
      out.push_back({.name = key,
                     .dtype = dtype,
                     .shape = cpu.sizes().vec(),
                     .data = cpu.data_ptr(),
                     .bytes = static_cast<std::size_t>(cpu.numel()) * cpu.element_size()});
    }
    return add_safetensors(name, out, metadata);
  } catch (const std::exception& e) {
    return torch_failure(path_ + "/" + name, e);
  }
}

Status CheckpointStaging::add_trainer_state(const TrainerState& state) const {
  if (!state.extra.is_object()) return bad("trainer_state extra is not a JSON object");
  nlohmann::json j = state.extra;
  for (const char* key : {"format", "step", "stage", "policy_version", "rng"}) {
    if (j.contains(key))
      return bad(std::string("trainer_state extra uses the reserved key ") + key);
  }
  j["format"] = kTrainerStateFormat;
  j["step"] = state.step;
  j["stage"] = state.stage;
  j["policy_version"] = state.policy_version;
  try {
    j["rng"] = capture_rng_state();
  } catch (const std::exception& e) {
    return torch_failure("capturing the rng state", e);
  }
  return add_file(kTrainerStateName, j.dump(2) + "\n");
}

Expected<std::string> CheckpointStaging::seal() {
  if (path_.empty()) return bad("seal: staging already sealed or abandoned");
  // Digests the writers recorded.
  std::map<std::string, FileSum> recorded;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path_ + "/" + kDigestsDir, ec)) {
    std::ifstream in(e.path());
    FileSum sum;
    std::string name;
    if (in >> sum.digest >> sum.size && std::getline(in >> std::ws, name) && !name.empty()) {
      recorded[name] = sum;
    }
  }
  // Every file, and every directory, of the staging tree.
  std::vector<std::string> files, dirs{path_};
  for (auto it = fs::recursive_directory_iterator(path_, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), path_).generic_string();
    if (rel == kDigestsDir) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink()) {
      return bad(path_ + ": '" + rel + "' is a symbolic link");
    } else if (it->is_directory()) {
      dirs.push_back(it->path().string());
    } else if (it->is_regular_file()) {
      if (rel != kChecksumsName) files.push_back(rel);
    } else {
      return bad(path_ + ": '" + rel + "' is neither a file nor a directory");
    }
  }
  if (ec) return make_error(ErrorCategory::kIo, "checkpoint.io", path_ + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<FileSum> sums(files.size());
  RETURN_IF_ERROR(parallel_for_each(files.size(), [&](std::size_t i) -> Status {
    const std::string full = path_ + "/" + files[i];
    auto it = recorded.find(files[i]);
    struct stat st {};
    if (it != recorded.end() && ::stat(full.c_str(), &st) == 0 &&
        static_cast<std::uint64_t>(st.st_size) == it->second.size) {
      sums[i] = it->second;  // written and fsynced by add_*
      return Status::ok();
    }
    ASSIGN_OR_RETURN(sums[i], hash_file(full, /*sync=*/true));
    return Status::ok();
  }));
  std::string text = std::string(kChecksumsHeader) + "\n";
  for (std::size_t i = 0; i < files.size(); ++i) {
    text += sums[i].digest + " " + std::to_string(sums[i].size) + " " + files[i] + "\n";
  }
  fs::remove_all(path_ + "/" + kDigestsDir, ec);
  FileWriter w;
  RETURN_IF_ERROR(w.open(path_ + "/" + kChecksumsName));
  RETURN_IF_ERROR(w.write(text.data(), text.size()));
  RETURN_IF_ERROR(w.finish());
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) RETURN_IF_ERROR(fsync_dir(*d));

  const std::string final_path = root_ + "/" + checkpoint_dir_name(step_);
  bool replaced = false;
  if (fs::exists(final_path, ec)) {
    // Swap atomically where the filesystem can; the old one then sits at path_ (a .tmp name).
    if (::syscall(SYS_renameat2, AT_FDCWD, path_.c_str(), AT_FDCWD, final_path.c_str(),
                  /*RENAME_EXCHANGE=*/2) == 0) {
      replaced = true;
    } else {
      const std::string old = path_ + ".old";
      if (::rename(final_path.c_str(), old.c_str()) != 0)
        return io_error(final_path + ": rename", errno);
      if (::rename(path_.c_str(), final_path.c_str()) != 0)
        return io_error(path_ + ": rename", errno);
      RETURN_IF_ERROR(fsync_dir(root_));
      fs::remove_all(old, ec);
    }
  } else if (::rename(path_.c_str(), final_path.c_str()) != 0) {
    return io_error(path_ + ": rename to " + final_path, errno);
  }
  RETURN_IF_ERROR(fsync_dir(root_));
  if (replaced) fs::remove_all(path_, ec);
  path_.clear();
  return final_path;
}

Status CheckpointStaging::abandon() {
  if (path_.empty()) return Status::ok();
  std::error_code ec;
  fs::remove_all(path_, ec);
  path_.clear();
  if (ec) return make_error(ErrorCategory::kIo, "checkpoint.io", ec.message());
  return Status::ok();
}

// ---- reading ----

bool LoadedCheckpoint::has(const std::string& name) const {
  return std::find(files.begin(), files.end(), name) != files.end();
}

Expected<std::map<std::string, at::Tensor>> LoadedCheckpoint::load_tensors(
    const std::string& name) const {
  ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(file(name)));
  try {
    std::map<std::string, at::Tensor> out;
    for (const auto& [key, t] : f.tensors()) {
      auto dtype = torch_dtype_of(t.dtype);
      at::Tensor dst = at::empty(t.shape, at::TensorOptions().dtype(dtype));
      if (t.bytes > 0) std::memcpy(dst.data_ptr(), t.data, t.bytes);
      out.emplace(key, dst);
    }
    return out;
  } catch (const std::exception& e) {
    return torch_failure(file(name), e);
  }
}

Expected<LoadedCheckpoint> load_checkpoint(const std::string& dir_in,
                                           const CheckpointLoadOptions& options) {
  const std::string dir = clean_dir(dir_in);
  LoadedCheckpoint ck;
  ck.path = dir;
  const std::string name = fs::path(dir).filename().string();
  auto step = parse_step(name, "step-", false);
  if (!step) return bad(dir + ": not a step-<8 digits> directory");
  ck.step = *step;
  std::ifstream in(dir + "/" + kChecksumsName);
  if (!in) return bad(dir + ": " + kChecksumsName + " is missing (an unfinished write)");
  std::string line;
  if (!std::getline(in, line) || line != kChecksumsHeader) {
    return bad(dir + ": " + kChecksumsName + " does not start with '" + kChecksumsHeader + "'");
  }
  std::vector<FileSum> want;
  for (int n = 2; std::getline(in, line); ++n) {
    std::istringstream ls(line);
    FileSum sum;
    std::string file;
    if (!(ls >> sum.digest >> sum.size) || !std::getline(ls >> std::ws, file) || file.empty() ||
        sum.digest.size() != 64 || !check_name(file)) {
      return bad(dir + ": " + kChecksumsName + " line " + std::to_string(n) + " is unparsable");
    }
    ck.files.push_back(file);
    want.push_back(sum);
  }
  if (!in.eof()) return bad(dir + ": " + kChecksumsName + ": read failed");
  RETURN_IF_ERROR(parallel_for_each(ck.files.size(), [&](std::size_t i) -> Status {
    const std::string full = dir + "/" + ck.files[i];
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0) return bad(dir + ": file '" + ck.files[i] + "' is missing");
    if (static_cast<std::uint64_t>(st.st_size) != want[i].size) {
      return bad(dir + ": file '" + ck.files[i] + "' has " + std::to_string(st.st_size) +
                 " bytes, CHECKSUMS says " + std::to_string(want[i].size));
    }
    if (!options.verify_digests) return Status::ok();
    ASSIGN_OR_RETURN(FileSum got, hash_file(full, /*sync=*/false));
    if (got.digest != want[i].digest || got.size != want[i].size) {
      return bad(dir + ": file '" + ck.files[i] + "' does not match its digest in CHECKSUMS");
    }
    return Status::ok();
  }));
  if (!ck.has(kTrainerStateName)) return bad(dir + ": no " + kTrainerStateName + " in CHECKSUMS");
  std::ifstream ts(ck.file(kTrainerStateName));
  std::stringstream text;
  text << ts.rdbuf();
  ck.trainer_state = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!ck.trainer_state.is_object() ||
      ck.trainer_state.value("format", "") != kTrainerStateFormat) {
    return bad(dir + ": file '" + std::string(kTrainerStateName) + "' is not a trainer state");
  }
  return ck;
}

std::vector<std::uint64_t> list_checkpoints(const std::string& root) {
  std::vector<std::uint64_t> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    auto step = parse_step(e.path().filename().string(), "step-", false);
    if (step && e.is_directory()) steps.push_back(*step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

Expected<LoadedCheckpoint> load_latest_checkpoint(const std::string& root_in,
                                                  const CheckpointLoadOptions& options) {
  const std::string root = clean_dir(root_in);
  std::vector<std::string> skipped;
  for (std::uint64_t step : list_checkpoints(root)) {
    const std::string dir = root + "/" + checkpoint_dir_name(step);
    auto ck = load_checkpoint(dir, options);
    if (!ck) {
      log_warn("checkpoint: skipping an invalid checkpoint",
               {{"checkpoint", dir}, {"reason", ck.error().message}});
      skipped.push_back(ck.error().message);
      continue;
    }
    ck->skipped = std::move(skipped);
    if (options.remove_stale_staging) remove_stale_staging(root, step);
    return ck;
  }
  std::string msg = root + ": no valid checkpoint";
  for (const auto& s : skipped) msg += "; skipped " + s;
  return make_error(ErrorCategory::kNotFound, "checkpoint.none", msg);
}

Expected<std::vector<std::string>> prune_checkpoints(const std::string& root_in,
                                                     const PruneOptions& options) {
  const std::string root = clean_dir(root_in);
  std::vector<std::string> removed;
  CheckpointLoadOptions verify = options.verify;
  verify.remove_stale_staging = true;
  auto newest = load_latest_checkpoint(root, verify);
  if (!newest) {
    if (newest.error().category == ErrorCategory::kNotFound) return removed;  // nothing to trust
    return newest.error();
  }
  const std::vector<std::uint64_t> steps = list_checkpoints(root);
  const std::size_t keep = std::max<std::size_t>(options.keep_last, 1);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::uint64_t s = steps[i];
    if (i < keep || s == newest->step ||
        std::find(options.protect_steps.begin(), options.protect_steps.end(), s) !=
            options.protect_steps.end()) {
      continue;
    }
    const std::string dir = root + "/" + checkpoint_dir_name(s);
    RETURN_IF_ERROR(remove_dir(root, dir, s));
    removed.push_back(dir);
  }
  return removed;
}

}  // namespace cuda_agent
