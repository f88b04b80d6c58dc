// Block-quantised weights in the style of inference engines: the block sizes are macros,
// and a kernel is named with them: -k 'dequantize_block<QK4_0, QR4_0, dequantize_q4_0, float>'.
#include <cuda_fp16.h>
#include <cstdint>

#define QK4_0 32
#define QR4_0 2
#define QK8_0 32
#define QR8_0 1

typedef half2 dfloat2;

typedef struct {
    half d;
    uint8_t qs[QK4_0 / 2];
} block_q4_0;
static_assert(sizeof(block_q4_0) == sizeof(half) + QK4_0 / 2, "q4_0 block is packed");

typedef struct {
    half d;
    int8_t qs[QK8_0];
} block_q8_0;

typedef void (*dequantize_kernel_t)(const void* vx, const int ib, const int iqs, dfloat2& v);

static __device__ __forceinline__ void dequantize_q4_0(const void* vx, const int ib, const int iqs, dfloat2& v) {
    const block_q4_0* x = (const block_q4_0*)vx;
    const half d = x[ib].d;
    const int packed = x[ib].qs[iqs];
    v.x = __int2half_rn(packed & 0xF);
    v.y = __int2half_rn(packed >> 4);
    v = __hsub2(v, {8.0f, 8.0f});
    v = __hmul2(v, {d, d});
}

static __device__ __forceinline__ void dequantize_q8_0(const void* vx, const int ib, const int iqs, dfloat2& v) {
    const block_q8_0* x = (const block_q8_0*)vx;
    const half d = x[ib].d;
    v.x = __int2half_rn(x[ib].qs[iqs + 0]);
    v.y = __int2half_rn(x[ib].qs[iqs + 1]);
    v = __hmul2(v, {d, d});
}

// Each thread writes two values of one quantised block.
template <int qk, int qr, dequantize_kernel_t dequantize_kernel, typename dst_t>
static __global__ void dequantize_block(const void* __restrict__ vx, dst_t* __restrict__ y, const int64_t k) {
    const int64_t i = (int64_t)2 * (blockDim.x * blockIdx.x + threadIdx.x);
    if (i >= k) {
        return;
    }
    const int64_t ib = i / qk;
    const int64_t iqs = (i % qk) / qr;
    const int64_t iybs = i - i % qk;
    const int64_t y_offset = qr == 1 ? 1 : qk / 2;
    dfloat2 v;
    dequantize_kernel(vx, ib, iqs, v);
    y[iybs + iqs + 0] = v.x;
    y[iybs + iqs + y_offset] = v.y;
}
