// Mixed-precision GEMM building blocks as int4-weight inference kernels write them: inline
// PTX (cp.async with a predicate, lop3, mma.sync; some in GNU's spelling, `__asm__ __volatile__`,
// which NVRTC does not know) in small helpers, a Vec<T, n> template
// with operator[] behind using-aliases, uint32_t reached only through <cuda.h>, a template
// helper on an immediate ("n" constraint), and host code that picks and launches an
// instantiation through a function-pointer typedef (left out of the fused file).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <iostream>

namespace w4 {

constexpr int div_up(int a, int b) { return (a + b - 1) / b; }

template <typename T, int n>
struct Vec {
  T v[n];
  __device__ T& operator[](int i) { return v[i]; }
  __device__ const T& operator[](int i) const { return v[i]; }
};

using Int4 = Vec<int, 4>;
using FragA = Vec<half2, 4>;
using FragB = Vec<half2, 2>;
using FragC = Vec<float, 4>;

__device__ inline void async_copy16(void* shared, const void* global, bool pred = true) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %0, 0;\n"
      "  @p cp.async.cg.shared.global [%1], [%2], 16;\n"
      "}\n" ::"r"(static_cast<int>(pred)),
      "r"(address), "l"(global));
}

__device__ inline void async_commit() { __asm__ __volatile__("cp.async.commit_group;\n" ::); }

template <int pending>
__device__ inline void async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(pending)); }

template <int table>
__device__ inline uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm volatile("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c), "n"(table));
  return r;
}

// four int4 values (two nibbles of each 16-bit half) to half2 pairs, minus the zero point 8:
// or-ing a nibble into the mantissa of 1024.0 (0x6400) gives 1024 + q
__device__ inline FragB unpack_int4(uint32_t q) {
  constexpr uint32_t kLow = 0x000f000f, kHigh = 0x00f000f0, kExponent = 0x64006400;
  const uint32_t lo = lop3<(0xf0 & 0xcc) | 0xaa>(q, kLow, kExponent);
  const uint32_t hi = lop3<(0xf0 & 0xcc) | 0xaa>(q, kHigh, kExponent);
  constexpr uint32_t kSubLow = 0x64086408;   // 1032.0 twice
  constexpr uint32_t kMulHigh = 0x2c002c00;  // 1/16 twice
  constexpr uint32_t kAddHigh = 0xd480d480;  // -72.0 twice
  FragB out;
  out[0] = __hsub2(*reinterpret_cast<const half2*>(&lo), *reinterpret_cast<const half2*>(&kSubLow));
  out[1] = __hfma2(*reinterpret_cast<const half2*>(&hi), *reinterpret_cast<const half2*>(&kMulHigh),
                   *reinterpret_cast<const half2*>(&kAddHigh));
  return out;
}

__device__ inline void mma_16816(const FragA& a, const FragB& b, FragC& c) {
  const uint32_t* ra = reinterpret_cast<const uint32_t*>(&a);
  const uint32_t* rb = reinterpret_cast<const uint32_t*>(&b);
  float* rc = reinterpret_cast<float*>(&c);
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(rc[0]), "=f"(rc[1]), "=f"(rc[2]), "=f"(rc[3])
      : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]), "f"(rc[1]), "f"(rc[2]),
        "f"(rc[3]));
}

// each warp: one m16n8k16 product of a fragment of A and an int4-packed fragment of B
template <const int threads>
__global__ void warp_mma_w4(const int4* __restrict__ a, const uint32_t* __restrict__ b, float* __restrict__ c, int tiles) {
  const int tile = blockIdx.x * (threads / 32) + threadIdx.x / 32;
  if (tile >= tiles) return;
  const int lane = threadIdx.x % 32;
  const FragA fa = *reinterpret_cast<const FragA*>(&a[tile * 32 + lane]);
  const FragB fb = unpack_int4(b[tile * 32 + lane]);
  FragC acc;
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i] = 0.f;
  mma_16816(fa, fb, acc);
#pragma unroll
  for (int i = 0; i < 4; ++i) c[(tile * 32 + lane) * 4 + i] = acc[i];
}

// stages 16-byte rows through shared memory with cp.async, then unpacks them
template <const int threads>
__global__ void staged_unpack(const int4* __restrict__ packed, int4* __restrict__ out, int rows) {
  extern __shared__ int4 stage[];
  const int row = blockIdx.x;
  if (row >= rows) return;
  async_copy16(&stage[threadIdx.x], &packed[row * threads + threadIdx.x]);
  async_commit();
  async_wait<0>();
  __syncthreads();
  const Int4 q = *reinterpret_cast<const Int4*>(&stage[(threadIdx.x + 1) % threads]);
  const FragB f = unpack_int4(static_cast<uint32_t>(q[0]));
  int4 r;
  *reinterpret_cast<FragB*>(&r) = f;
  r.z = q[1];
  r.w = q[2] ^ q[3];
  out[row * threads + threadIdx.x] = r;
}

typedef void (*mma_kernel_t)(const int4*, const uint32_t*, float*, int);

mma_kernel_t pick_mma(int threads) { return threads == 128 ? warp_mma_w4<128> : warp_mma_w4<256>; }

int run_mma(const int4* a, const uint32_t* b, float* c, int tiles, cudaStream_t stream) {
  pick_mma(256)<<<div_up(tiles, 8), 256, 0, stream>>>(a, b, c, tiles);
  if (cudaGetLastError() != cudaSuccess) std::cerr << "launch failed" << std::endl;
  return 0;
}

}  // namespace w4
