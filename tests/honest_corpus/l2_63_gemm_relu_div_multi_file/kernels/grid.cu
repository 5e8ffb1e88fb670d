#include <cuda_runtime.h>
unsigned elementwise_grid(long long n, int threads) {
  long long b = (n + threads - 1) / threads;
  return (unsigned)(b > 12288 ? 12288 : (b < 1 ? 1 : b));
}
