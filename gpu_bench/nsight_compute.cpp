#include "gpu_bench/nsight_compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "gpu_bench/harness_sandbox.h"

namespace cuda_agent {
namespace {

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kRegisters = "launch__registers_per_thread";
constexpr const char* kSharedStatic = "launch__shared_mem_per_block_static";
constexpr const char* kSharedDynamic = "launch__shared_mem_per_block_dynamic";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* kDram = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kSm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

// One CSV record: fields split on commas outside double quotes, "" inside quotes is a quote.
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

// A metric value: ncu may print thousands separators; "n/a" and empty read as 0.
double number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? 0.0 : v;
}

// Microseconds per unit of a duration column.
double to_us(const std::string& unit) {
  if (unit == "nsecond" || unit == "ns") return 1e-3;
  if (unit == "msecond" || unit == "ms") return 1e3;
  if (unit == "second" || unit == "s") return 1e6;
  return 1.0;  // usecond
}

// Bytes per unit of a memory-size column.
double to_bytes(const std::string& unit) {
  if (unit == "Kbyte" || unit == "KB") return 1e3;
  if (unit == "Mbyte" || unit == "MB") return 1e6;
  if (unit == "Kibyte" || unit == "KiB") return 1024.0;
  return 1.0;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

std::string find_nsight_compute(const std::string& configured) {
  if (configured.empty() || configured == "off") return "";
  auto found = find_program(configured == "auto" ? "ncu" : configured, "Nsight Compute");
  if (found) return *found;
  if (configured != "auto") return "";
  auto cuda = find_program("/usr/local/cuda/bin/ncu", "Nsight Compute");
  return cuda ? *cuda : "";
}

const std::vector<std::string>& nsight_compute_metrics() {
  static const std::vector<std::string> m = {
      kDuration, kRegisters, kSharedStatic, kSharedDynamic, kOccupancy, kDram, kSm};
  return m;
}

std::vector<std::string> nsight_compute_argv(const std::string& ncu, const std::string& log_path) {
  std::string metrics;
  for (const std::string& m : nsight_compute_metrics()) metrics += (metrics.empty() ? "" : ",") + m;
  return {ncu,   "--profile-from-start", "off",  "--metrics",  metrics, "--csv", "--page",
          "raw", "--print-units",        "base", "--log-file", log_path};
}

Expected<std::vector<NcuKernel>> parse_nsight_compute_csv(std::string_view text) {
  const std::vector<std::string_view> lines = lines_of(text);
  std::size_t h = 0;
  std::vector<std::string> header;
  for (; h < lines.size(); ++h) {
    if (lines[h].rfind("==", 0) == 0 || lines[h].find("Kernel Name") == std::string_view::npos)
      continue;
    header = csv_fields(lines[h]);
    break;
  }
  auto bad = [](const std::string& what) {
    return make_error(ErrorCategory::kInternal, "bench.ncu", "Nsight Compute output: " + what);
  };
  if (header.empty()) return bad("no header row with \"Kernel Name\"");
  auto column = [&](const std::string& name) -> std::ptrdiff_t {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : it - header.begin();
  };
  const std::ptrdiff_t name_col = column("Kernel Name");
  std::map<std::string, std::ptrdiff_t> cols;
  for (const std::string& m : nsight_compute_metrics()) {
    cols[m] = column(m);
    if (cols[m] < 0) return bad("no column " + m);
  }
  std::vector<std::string> units(header.size());
  std::map<std::string, NcuKernel> by_name;
  for (std::size_t i = h + 1; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i].rfind("==", 0) == 0) continue;
    std::vector<std::string> f = csv_fields(lines[i]);
    if (f.size() < header.size()) continue;
    if (f[name_col].empty()) {  // the units row: no kernel name
      units = f;
      continue;
    }
    auto value = [&](const char* metric) { return number(f[cols[metric]]); };
    NcuKernel& k = by_name[f[name_col]];
    k.name = f[name_col];
    const double n = static_cast<double>(k.launches);
    k.total_us += value(kDuration) * to_us(units[cols[kDuration]]);
    k.registers = value(kRegisters);
    k.shared_bytes = value(kSharedStatic) * to_bytes(units[cols[kSharedStatic]]) +
                     value(kSharedDynamic) * to_bytes(units[cols[kSharedDynamic]]);
    k.occupancy_pct = (k.occupancy_pct * n + value(kOccupancy)) / (n + 1);
    k.dram_pct = (k.dram_pct * n + value(kDram)) / (n + 1);
    k.sm_pct = (k.sm_pct * n + value(kSm)) / (n + 1);
    ++k.launches;
  }
  std::vector<NcuKernel> out;
  for (auto& [name, k] : by_name) out.push_back(std::move(k));
  std::sort(out.begin(), out.end(),
            [](const NcuKernel& a, const NcuKernel& b) { return a.total_us > b.total_us; });
  return out;
}

std::string render_nsight_compute(const std::vector<NcuKernel>& kernels, std::int64_t calls,
                                  std::size_t max_lines) {
  std::string out = fmt::format(
      "Nsight Compute: {} forward call(s); per kernel: launches, mean time, registers/thread, "
      "shared memory/block, achieved occupancy, DRAM and SM throughput (% of peak)\n",
      calls);
  out += fmt::format("{:>6} {:>10} {:>5} {:>8} {:>6} {:>6} {:>6}  {}\n", "calls", "avg_us", "regs",
                     "smem_B", "occ%", "dram%", "sm%", "kernel");
  std::size_t shown = 0;
  for (const NcuKernel& k : kernels) {
    if (shown + 2 >= max_lines) break;
    const std::string name = k.name.size() <= 70 ? k.name : k.name.substr(0, 67) + "...";
    out += fmt::format("{:>6} {:>10.2f} {:>5.0f} {:>8.0f} {:>6.1f} {:>6.1f} {:>6.1f}  {}\n",
                       k.launches, k.total_us / std::max<std::int64_t>(k.launches, 1), k.registers,
                       k.shared_bytes, k.occupancy_pct, k.dram_pct, k.sm_pct, name);
    ++shown;
  }
  if (kernels.empty()) out += "(no kernel launched inside the profiled calls)\n";
  return out;
}

std::string nsight_compute_failure(std::string_view log) {
  if (log.find("ERR_NVGPUCTRPERM") != std::string_view::npos)
    return "no permission for the GPU's performance counters (ERR_NVGPUCTRPERM): run the bench "
           "worker's harness as root (CUDA_AGENT_BENCH_KEEP_UID=1) or load the driver with "
           "NVreg_RestrictProfilingToAdminUsers=0";
  for (std::string_view line : lines_of(log)) {
    if (line.rfind("==ERROR==", 0) == 0) return std::string(line.substr(0, 300));
  }
  return "";
}

}  // namespace cuda_agent
