// Benchmark (label gpu): the memory ceiling of each GPU and the cost of a health check.
//
// What it measures, after checking the copy is correct:
//  - device-to-device copy bandwidth, counting bytes read plus bytes written, of
//    (a) cudaMemcpyAsync (the anchor) and (b) a grid-stride float4 copy kernel of ours, each the
//    median of 20 event-timed copies of a 1 GiB buffer (16x the H200's L2) after 3 warm-ups;
//    the ratio b/a is reported. This is the roofline ceiling later used to flag implausible
//    speedups;
//  - health_check() latency on a 64 MiB buffer: median and max of 20 calls (host wall clock).
// Prints one table; exits 0 with "skipped" where there is no GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "gpu_bench/device_probe.h"

namespace {

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t rc_ = (call);                                                                      \
    if (rc_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(rc_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

__global__ void copy_f4(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void fill_pattern(float* p, size_t n, float seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = seed + static_cast<float>(i % 1000003);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_ms(F&& launch, cudaEvent_t a, cudaEvent_t b) {
  CHECK(cudaEventRecord(a));
  launch();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

}  // namespace

int main() {
  auto list = cuda_agent::list_devices();
  if (list.devices.empty()) {
    std::printf("device_ceilings: skipped: no GPU: %s\n", list.no_gpu_reason.c_str());
    return 0;
  }
  std::printf("%-3s %-14s %12s %12s %7s %12s %12s\n", "gpu", "name", "memcpy GB/s", "kernel GB/s",
              "ratio", "health p50", "health max");
  for (const auto& d : list.devices) {
    CHECK(cudaSetDevice(d.index));
    const size_t bytes = size_t(1) << 30;
    const size_t n4 = bytes / sizeof(float4);
    float *in = nullptr, *out = nullptr;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    fill_pattern<<<4096, 256>>>(in, bytes / sizeof(float), 1.5f);
    CHECK(cudaMemset(out, 0xff, bytes));  // poison: a copy that writes nothing fails the check
    int sms = d.multiprocessors;
    auto kernel = [&] {
      copy_f4<<<sms * 8, 512>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out),
                                n4);
    };
    auto memcpy_ = [&] { CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); };

    // Correctness before any number: both copies must reproduce the input exactly.
    auto copies_correctly = [&](const char* what, auto&& copy) {
      CHECK(cudaMemset(out, 0xff, bytes));
      copy();
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::vector<float> a(1 << 20), b(1 << 20);
      for (size_t off : {size_t(0), bytes / 2, bytes - a.size() * sizeof(float)}) {
        CHECK(cudaMemcpy(a.data(), reinterpret_cast<char*>(in) + off, a.size() * 4,
                         cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b.data(), reinterpret_cast<char*>(out) + off, b.size() * 4,
                         cudaMemcpyDeviceToHost));
        if (a != b) {
          std::fprintf(stderr, "device_ceilings: GPU %d: %s copy is wrong at offset %zu\n", d.index,
                       what, off);
          return false;
        }
      }
      return true;
    };
    if (!copies_correctly("kernel", kernel) || !copies_correctly("memcpy", memcpy_)) return 1;

    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<double> t_memcpy, t_kernel;
    for (int i = 0; i < 23; ++i) {  // interleaved; the first 3 of each are warm-up
      double a = time_ms(memcpy_, e0, e1);
      double b = time_ms(kernel, e0, e1);
      if (i >= 3) {
        t_memcpy.push_back(a);
        t_kernel.push_back(b);
      }
    }
    CHECK(cudaGetLastError());
    const double gbps_memcpy = 2.0 * bytes / (median(t_memcpy) * 1e-3) / 1e9;
    const double gbps_kernel = 2.0 * bytes / (median(t_kernel) * 1e-3) / 1e9;
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));

    std::vector<double> health;
    for (int i = 0; i < 20; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto s = cuda_agent::health_check(d.index, std::chrono::seconds(30));
      auto t1 = std::chrono::steady_clock::now();
      if (!s) {
        std::fprintf(stderr, "device_ceilings: %s\n", s.error().to_string().c_str());
        return 1;
      }
      health.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::printf("%-3d %-14.14s %12.0f %12.0f %7.3f %10.2fms %10.2fms\n", d.index, d.name.c_str(),
                gbps_memcpy, gbps_kernel, gbps_kernel / gbps_memcpy, median(health),
                *std::max_element(health.begin(), health.end()));
  }
  std::printf(
      "method: 1 GiB D2D copy, bytes read+written / event time, median of 20 after 3 "
      "warm-ups, memcpy and kernel interleaved; health check: 64 MiB kernel + copy-back + "
      "host check, host wall clock, 20 calls\n");
  return 0;
}
