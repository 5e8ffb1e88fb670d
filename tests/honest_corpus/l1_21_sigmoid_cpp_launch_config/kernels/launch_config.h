#pragma once
// Blocks for a grid-stride loop over n elements with `threads` threads per block.
int grid_blocks(long long n, int threads);
