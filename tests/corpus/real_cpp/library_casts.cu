// The user's kernel loads through a library's vector casts (fakelib/casts.cuh, a kept header).
#include <fakelib/casts.cuh>

template <int N>
__global__ void scale_half(const __half* x, __half* y, float s, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * N;
  if (i + N <= n) {
    fakelib::vec<float, N> v;
    v.cast_load(x + i);
#pragma unroll
    for (int k = 0; k < N; ++k) v.data[k] *= s;
    v.cast_store(y + i);
  }
}
