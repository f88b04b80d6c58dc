// C++ as libraries write it, which the front end once misread: helpers and operators that
// return references, a comment between a template header and its kernel, a qualified
// call broken across lines.
struct V { float x; };
__device__ __forceinline__ float& at(float* p, int i) { return p[i]; }
__device__ inline V& operator+=(V& a, const V& b) { a.x += b.x; return a; }
template <typename T>
// a comment between the template header and the kernel
__global__ void k1(T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) at(out, i) = at(out, i) * 2;
}
namespace ns { __device__ float twice(float v) { return 2 * v; } }
__global__ void k2(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  V a{1.0f}, b{2.0f}; a += b;
  if (i < n) out[i] = ns::
      twice(out[i]) + a.x;
}

// launch bounds written as constant expressions, of literals and of template parameters
#define BM 64
#define BN 64
template <int TM, int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1) tile_bounded(float* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

template <int NUM_THREADS>
__global__ void __launch_bounds__(NUM_THREADS) param_bounded(float* out) {
  out[blockIdx.x * NUM_THREADS + threadIdx.x] = 2.0f;
}

// two kernels of one name: a plain one and a template
__global__ void fill(float* out, float v) { out[blockIdx.x * blockDim.x + threadIdx.x] = v; }
template <typename T>
__global__ void fill(T* out, T v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}
