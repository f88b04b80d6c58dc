// Kernels written with an installed library's macros (tests/corpus/real_cpp/sysinclude, given
// with -isystem): in signatures, loops, indices and barriers. Before, hfuse kept those
// macros as written: the kernels were "host functions", did not parse, or (FAKELIB_GLOBAL_TID)
// read the fused block's raw threadIdx and computed other values with no error.
#include <fakelib/macros.h>

__global__ void FAKELIB_LAUNCH_BOUNDS_1(256) scale_loop(float* FAKELIB_RESTRICT x, float s, int n) {
  FAKELIB_KERNEL_LOOP(i, n) { x[i] = x[i] * x[i] * s; }
}

__global__ void offset_by_index(float* x, int n) {
  const int i = FAKELIB_GLOBAL_TID;
  if (i < n) x[i] += static_cast<float>(i % FAKELIB_WARP_SIZE);
}

__global__ void FAKELIB_LAUNCH_BOUNDS_2(128, 4) reverse_tiles(const float* FAKELIB_RESTRICT x, float* y, int n) {
  __shared__ float tile[128];
  const int i = FAKELIB_GLOBAL_TID;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  FAKELIB_SYNC();
  if (i < n) y[i] = tile[blockDim.x - 1 - threadIdx.x];
}
