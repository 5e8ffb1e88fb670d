// What GPUs this machine has, and whether one is healthy enough to take work. The bench worker
// records DeviceInfo in every audit record (GPU model and clocks) and runs the health check
// after any harness child crashed, hung or faulted, before it takes more work.
//
// Machines without a GPU or driver are normal (CPU build machines, CI): `list_devices` then
// returns an empty list and `no_gpu_reason` says why, rather than an error.
//
// Threading: plain functions; each call selects the device it names on the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace cuda_agent {

struct DeviceInfo {
  int index = 0;
  std::string name;        ///< e.g. "NVIDIA H200"
  std::string uuid;        ///< "GPU-xxxxxxxx-..." (stable across reboots, unlike the index)
  std::string pci_bus_id;  ///< "0000:1b:00.0"
  int cc_major = 0;        ///< compute capability
  int cc_minor = 0;
  int multiprocessors = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  int sm_clock_khz = 0;      ///< maximum SM clock
  int memory_clock_khz = 0;  ///< maximum memory clock
  int memory_bus_bits = 0;
  int driver_version = 0;  ///< e.g. 13000 for CUDA 13.0
  int runtime_version = 0;
};

struct DeviceList {
  std::vector<DeviceInfo> devices;
  /// Why `devices` is empty, e.g. "cudaGetDeviceCount: no CUDA-capable device is detected (100)".
  std::string no_gpu_reason;
};

/// Every visible device. Not an error when there is none.
DeviceList list_devices();

/// Runs a known computation on device `index` (a kernel over `bytes` of memory, copied back and
/// checked) with a wall-clock deadline. A sticky CUDA error, a wrong result or a missed deadline
/// is an Error; the GPU must then not take more work.
Status health_check(int index, std::chrono::milliseconds deadline, std::size_t bytes = 64u << 20);

}  // namespace cuda_agent
