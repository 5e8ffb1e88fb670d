// Checkpoint write bandwidth against the disk's own sequential write bandwidth, in one run.
//
//   learner_checkpoint_bench [--mb=320] [--rounds=3] [--dir=PATH]
//
// A checkpoint of --mb MiB: half a model.safetensors written by write_safetensors (as
// Transformer::save does: seal() then fsyncs and hashes it by reading it back), half an
// optimizer file through CheckpointStaging::add_safetensors (hashed as it is written), and
// trainer_state.json; begin() to seal() is timed. The baseline writes the same bytes to files of
// the same sizes with write(2) in 8 MiB pieces, fsyncs each file, renames them into place and
// fsyncs the directory: the same durability, no hashing, no format. Rounds alternate the two;
// the figures are medians. First, the checkpoint of round 1 must load and verify with its
// optimizer bytes intact, or the benchmark fails without printing figures.
//
// Target: checkpoint / baseline >= 0.5. The checkpoint hashes every byte (BLAKE2b, ~0.6 GB/s
// per core, 64 MiB pieces on all cores) while the disk writes: on a machine whose cores are
// busy with other work the ratio falls with the CPU it gets, so each round prints the CPU
// seconds spent and the load average.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "learner/checkpoint.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;
using namespace cuda_agent;

namespace {

// CPU seconds of this process (every thread), user + system.
double cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "?" : one;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool write_plain(const std::string& dir, const std::string& name, const char* data, std::size_t n) {
  const std::string tmp = dir + "/" + name + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  for (std::size_t off = 0; off < n;) {
    const ssize_t w = ::write(fd, data + off, std::min<std::size_t>(n - off, 8u << 20));
    if (w <= 0) return false;
    off += static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return false;
  return ::rename(tmp.c_str(), (dir + "/" + name).c_str()) == 0;
}

bool fsync_path(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mb = 320;
  int rounds = 3;
  std::string dir =
      (fs::temp_directory_path() / ("ca_ckpt_bench_" + std::to_string(::getpid()))).string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--mb=", 0) == 0) {
      mb = std::stoul(a.substr(5));
    } else if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::stoi(a.substr(9)));
    } else if (a.rfind("--dir=", 0) == 0) {
      dir = a.substr(6) + "/ca_ckpt_bench_" + std::to_string(::getpid());
    } else {
      std::fprintf(stderr, "usage: %s [--mb=320] [--rounds=3] [--dir=PATH]\n", argv[0]);
      return 2;
    }
  }
  const std::size_t half = (mb << 20) / 2 / 4 * 4;  // bytes per file, whole fp32 elements
  std::vector<char> model(half), optim(half);
  std::mt19937_64 rng(1);
  for (auto* buf : {&model, &optim}) {
    for (std::size_t i = 0; i + 8 <= buf->size(); i += 8) {
      const std::uint64_t x = rng();
      std::memcpy(buf->data() + i, &x, 8);
    }
  }
  auto tensor = [&](const char* name, const std::vector<char>& b) {
    return SafetensorsWriteTensor{.name = name,
                                  .dtype = StDtype::kF32,
                                  .shape = {static_cast<std::int64_t>(b.size() / 4)},
                                  .data = b.data(),
                                  .bytes = b.size()};
  };
  const std::size_t total = 2 * half;
  fs::create_directories(dir);
  std::printf("checkpoint write: %zu MiB in 2 files + trainer_state.json, %d rounds, in %s\n",
              total >> 20, rounds, dir.c_str());

  std::vector<double> base_bw, ckpt_bw, base_cpu, ckpt_cpu;
  for (int r = 0; r < rounds; ++r) {
    // Baseline.
    const std::string bdir = dir + "/baseline";
    fs::remove_all(bdir);
    fs::create_directories(bdir);
    fsync_path(dir);
    double t0 = now_s(), c0 = cpu_s();
    if (!write_plain(bdir, "a", model.data(), model.size()) ||
        !write_plain(bdir, "b", optim.data(), optim.size()) || !fsync_path(bdir)) {
      std::fprintf(stderr, "baseline write failed: %s\n", std::strerror(errno));
      return 1;
    }
    base_bw.push_back(total / (now_s() - t0) / 1e6);
    base_cpu.push_back(cpu_s() - c0);
    fs::remove_all(bdir);

    // Checkpoint.
    const std::string root = dir + "/ckpt";
    fs::remove_all(root);
    fs::create_directories(root);
    fsync_path(dir);
    t0 = now_s();
    c0 = cpu_s();
    auto stage = CheckpointStaging::begin(root, static_cast<std::uint64_t>(r));
    Status st = stage ? write_safetensors(stage->path() + "/model.safetensors",
                                          {tensor("model.embed_tokens.weight", model)})
                      : Status(stage.error());
    if (st) st = stage->add_safetensors(optimizer_file_name("", 0), {tensor("master", optim)});
    if (st)
      st = stage->add_trainer_state({.step = static_cast<std::uint64_t>(r), .stage = "bench"});
    Expected<std::string> sealed = st ? stage->seal() : Expected<std::string>(st.error());
    const double dt = now_s() - t0;
    ckpt_cpu.push_back(cpu_s() - c0);
    if (!sealed) {
      std::fprintf(stderr, "checkpoint write failed: %s\n", sealed.error().to_string().c_str());
      return 1;
    }
    ckpt_bw.push_back(total / dt / 1e6);
    if (r == 0) {  // correctness before any figure
      auto ck = load_latest_checkpoint(root);
      auto f = ck ? SafetensorsFile::open(ck->file(optimizer_file_name("", 0)))
                  : Expected<SafetensorsFile>(ck.error());
      const SafetensorsTensor* t = nullptr;
      if (f && f->tensors().count("master")) t = &f->tensors().at("master");
      if (!t || t->bytes != optim.size() || std::memcmp(t->data, optim.data(), optim.size()) != 0) {
        std::fprintf(stderr, "checkpoint did not verify: %s\n",
                     ck ? "optimizer bytes differ" : ck.error().to_string().c_str());
        return 1;
      }
    }
    fs::remove_all(root);
    std::printf(
        "  round %d: baseline %.0f MB/s (%.2f s CPU), checkpoint %.0f MB/s (%.2f s CPU), load %s\n",
        r + 1, base_bw.back(), base_cpu.back(), ckpt_bw.back(), ckpt_cpu.back(), loadavg().c_str());
  }
  fs::remove_all(dir);
  const double b = median(base_bw), c = median(ckpt_bw);
  std::printf("sequential write + fsync (baseline): %.0f MB/s (median)\n", b);
  std::printf("checkpoint write (begin..seal):      %.0f MB/s (median)\n", c);
  std::printf("ratio checkpoint/baseline: %.2fx (target >= 0.5x)\n", c / b);
  std::printf("checkpoint CPU (hashing, all threads): %.2f s per GB; %u hardware threads\n",
              median(ckpt_cpu) / (total / 1e9), std::thread::hardware_concurrency());
  return 0;
}
