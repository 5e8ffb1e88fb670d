// Warps per block for a GEMV with `outputs` outputs: small layers get small blocks so that
// more SMs take part.
int gemv_warps_per_block(long long outputs) {
  if (outputs >= 8192) return 8;
  if (outputs >= 1024) return 4;
  return 2;
}
