#include <cuda_runtime.h>
// Grid of 32x32 tiles over an (H, W) matrix, one z-slice per matrix.
dim3 tile_grid(int slabs, int H, int W) { return dim3((W + 31) / 32, (H + 31) / 32, slabs); }
