#include "launch_config.h"

int grid_blocks(long long n, int threads) {
  long long b = (n + threads - 1) / threads;
  const long long cap = 132LL * 32;  // enough waves for an H200's 132 SMs
  if (b > cap) b = cap;
  return b < 1 ? 1 : (int)b;
}
