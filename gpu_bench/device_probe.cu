#include "gpu_bench/device_probe.h"

#include "gpu_bench/cuda_check.h"

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace cuda_agent {
namespace {

// y[i] = a * i + b, in 32-bit integers so the check is exact.
__global__ void fill_affine(unsigned* y, std::size_t n, unsigned a, unsigned b) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = a * static_cast<unsigned>(i) + b;
  }
}

std::string uuid_string(const cudaUUID_t& u) {
  static const char* hex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    const auto b = static_cast<unsigned char>(u.bytes[i]);
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

Status run_check(int index, std::chrono::milliseconds deadline, std::size_t bytes) {
  CUDA_TRY(cudaSetDevice(index));
  const std::size_t n = bytes / sizeof(unsigned);
  unsigned* d = nullptr;
  CUDA_TRY(cudaMalloc(&d, n * sizeof(unsigned)));
  struct Free {
    unsigned* p;
    ~Free() { cudaFree(p); }
  } guard{d};
  cudaEvent_t done;
  CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const unsigned a = 2654435761u, b = 12345u;
  fill_affine<<<1024, 256>>>(d, n, a, b);
  CUDA_TRY(cudaGetLastError());
  CUDA_TRY(cudaEventRecord(done));
  // Poll rather than block, so a hung device misses the deadline instead of hanging the caller.
  const auto until = std::chrono::steady_clock::now() + deadline;
  cudaError_t q;
  while ((q = cudaEventQuery(done)) == cudaErrorNotReady) {
    if (std::chrono::steady_clock::now() > until) {
      return make_error(ErrorCategory::kTimeout, "gpu.health_timeout",
                        "GPU " + std::to_string(index) +
                            ": health-check kernel did not finish within " +
                            std::to_string(deadline.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  cudaEventDestroy(done);
  if (q != cudaSuccess) return cuda_error("health-check kernel", q);
  std::vector<unsigned> host(n);
  CUDA_TRY(cudaMemcpy(host.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i) {
    if (host[i] != a * static_cast<unsigned>(i) + b) {
      return make_error(ErrorCategory::kIo, "gpu.health_wrong_result",
                        "GPU " + std::to_string(index) + ": health-check result wrong at element " +
                            std::to_string(i));
    }
  }
  return Status::ok();
}

}  // namespace

DeviceList list_devices() {
  DeviceList out;
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    // Error 35 (driver older than runtime / no driver) and 100 (no device) mean "no GPU here".
    out.no_gpu_reason = rc != cudaSuccess
                            ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc) + " (" +
                                  std::to_string(static_cast<int>(rc)) + ")"
                            : "cudaGetDeviceCount: 0 devices";
    cudaGetLastError();  // clear
    return out;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.uuid = uuid_string(p.uuid);
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    d.pci_bus_id = bus;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    d.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
    d.l2_bytes = p.l2CacheSize;
    cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, i);
    cudaDeviceGetAttribute(&d.memory_clock_khz, cudaDevAttrMemoryClockRate, i);
    cudaDeviceGetAttribute(&d.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
    d.driver_version = driver;
    d.runtime_version = runtime;
    out.devices.push_back(std::move(d));
  }
  return out;
}

Status health_check(int index, std::chrono::milliseconds deadline, std::size_t bytes) {
  Status s = run_check(index, deadline, bytes);
  if (!s) return Error(s.error()).with_context("GPU " + std::to_string(index) + " health check");
  return s;
}

}  // namespace cuda_agent
