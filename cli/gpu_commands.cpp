#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>

#include "cli/command.h"
#include "gpu_bench/device_probe.h"

namespace cuda_agent::cli {
namespace {

nlohmann::json to_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"multiprocessors", d.multiprocessors},
          {"memory_bytes", d.memory_bytes},
          {"l2_bytes", d.l2_bytes},
          {"sm_clock_khz", d.sm_clock_khz},
          {"memory_clock_khz", d.memory_clock_khz},
          {"memory_bus_bits", d.memory_bus_bits},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version}};
}

}  // namespace

void add_gpu_commands(CLI::App& app, CommandResult& result) {
  auto* gpu = app.add_subcommand("gpu", "GPUs of this machine");
  gpu->require_subcommand(1);

  auto* list = gpu->add_subcommand("list", "List GPUs with model, memory, clocks and driver");
  auto json = std::make_shared<bool>(false);
  list->add_flag("--json", *json, "print JSON");
  list->callback([json] {
    DeviceList devices = list_devices();
    if (*json) {
      nlohmann::json out = {{"devices", nlohmann::json::array()}};
      for (const auto& d : devices.devices) out["devices"].push_back(to_json(d));
      if (devices.devices.empty()) out["no_gpu_reason"] = devices.no_gpu_reason;
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    if (devices.devices.empty()) {
      std::printf("no GPU: %s\n", devices.no_gpu_reason.c_str());
      return;
    }
    for (const auto& d : devices.devices) {
      std::printf("%d  %s  cc %d.%d  %d SMs  %.1f GiB  SM %d MHz  mem %d MHz  %s  %s\n", d.index,
                  d.name.c_str(), d.cc_major, d.cc_minor, d.multiprocessors,
                  d.memory_bytes / double(1LL << 30), d.sm_clock_khz / 1000,
                  d.memory_clock_khz / 1000, d.pci_bus_id.c_str(), d.uuid.c_str());
    }
  });

  auto* check = gpu->add_subcommand(
      "check",
      "Run the health check (a kernel over 64 MiB, copied back and verified, with a "
      "deadline) on every GPU or one");
  struct Args {
    int index = -1;
    int deadline_ms = 30'000;
  };
  auto args = std::make_shared<Args>();
  check->add_option("--index", args->index, "one GPU index (default: all)");
  check->add_option("--deadline-ms", args->deadline_ms, "deadline per GPU")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<std::int32_t>::max()));
  check->callback([args, &result] {
    DeviceList devices = list_devices();
    if (devices.devices.empty()) {
      result.exit_code = report(make_error(ErrorCategory::kNotFound, "gpu.none",
                                           "no GPU to check: " + devices.no_gpu_reason));
      return;
    }
    if (args->index >= static_cast<int>(devices.devices.size())) {
      result.exit_code =
          report(make_error(ErrorCategory::kInvalidInput, "gpu.bad_index",
                            "--index " + std::to_string(args->index) + ": this machine has " +
                                std::to_string(devices.devices.size()) + " GPU(s)"));
      return;
    }
    for (const auto& d : devices.devices) {
      if (args->index >= 0 && d.index != args->index) continue;
      Status s = health_check(d.index, std::chrono::milliseconds(args->deadline_ms));
      if (!s) {
        result.exit_code = report(s.error());
        continue;
      }
      std::printf("GPU %d (%s): healthy\n", d.index, d.name.c_str());
    }
  });
}

}  // namespace cuda_agent::cli
