// int8 quantisation as inference libraries write it: per-row scales from a warp reduction,
// an enum class for the rounding, static_asserts, constexpr helpers, a specialised cast.
#include <cstdint>
#include <cuda_fp16.h>

enum class Rounding : int { kNearest = 0, kTowardZero = 1 };

constexpr int kWarpSize = 32;
static_assert(kWarpSize == 32, "warp reductions below assume 32 lanes");

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

template <Rounding R>
__device__ __forceinline__ int8_t to_int8(float v);

template <>
__device__ __forceinline__ int8_t to_int8<Rounding::kNearest>(float v) {
  return static_cast<int8_t>(max(-127.f, min(127.f, rintf(v))));
}

template <>
__device__ __forceinline__ int8_t to_int8<Rounding::kTowardZero>(float v) {
  return static_cast<int8_t>(max(-127.f, min(127.f, truncf(v))));
}

// one warp per row of `cols` values: scale = max|x| / 127
template <Rounding R = Rounding::kNearest>
__global__ void quantize_rows(const float* __restrict__ x, int8_t* __restrict__ q, float* __restrict__ scales,
                              int rows, int cols) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (warp >= rows) return;
  const float* row = x + static_cast<size_t>(warp) * cols;
  float amax = 0.f;
  for (int c = lane; c < cols; c += kWarpSize) amax = fmaxf(amax, fabsf(row[c]));
  amax = warp_max(amax);
  const float scale = amax > 0.f ? amax / 127.f : 1.f;
  for (int c = lane; c < cols; c += kWarpSize) q[static_cast<size_t>(warp) * cols + c] = to_int8<R>(row[c] / scale);
  if (lane == 0) scales[warp] = scale;
}

// dequantise blocks of 64 int8 values with one half scale each
constexpr int kGroup = 64;
__global__ void dequantize_groups(const int8_t* __restrict__ q, const __half* __restrict__ scales,
                                  float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(q[i]) * __half2float(scales[i / kGroup]);
}

// packed int4 pairs: low nibble first
__global__ void unpack_int4(const uint8_t* __restrict__ packed, int8_t* __restrict__ out, int n_bytes) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_bytes) return;
  const uint8_t b = packed[i];
  out[2 * i] = static_cast<int8_t>((b & 0xF) ^ 0x8) - 8;
  out[2 * i + 1] = static_cast<int8_t>((b >> 4) ^ 0x8) - 8;
}
