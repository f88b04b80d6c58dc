// Quantised blocks the way a C-flavoured inference engine writes them: typedef'd
// anonymous structs checked by static_assert, function pointers as template arguments, a
// constexpr selector that returns a function pointer (beside a traits table holding the
// addresses of loaders that read the block), an enum as a template argument,
// `static` kernels, 2D blocks (rows along threadIdx.y), a GNU `__extension__` anonymous union
// behind a macro (a keyword to gcc, unknown to NVRTC).
#include <cstdint>
#include <cuda_fp16.h>

#define QK4_0 32
#define QR4_0 2
#define QK8_0 32
#define QR8_0 1
#define WARP_SIZE 32
#define UNUSED_ARG(x) (void)(x)

typedef half dfloat;
typedef half2 dfloat2;

typedef struct {
    half d;                 // scale
    uint8_t qs[QK4_0 / 2];  // two nibbles per byte
} block_q4_0;
static_assert(sizeof(block_q4_0) == sizeof(half) + QK4_0 / 2, "wrong q4_0 block size/padding");

typedef struct {
    half d;
    int8_t qs[QK8_0];
} block_q8_0;
static_assert(sizeof(block_q8_0) == sizeof(half) + QK8_0, "wrong q8_0 block size/padding");

#ifdef _MSC_VER
#define QUANT_EXTENSION
#else
#define QUANT_EXTENSION __extension__
#endif

// a super-block: 8 sub-blocks of 32 4-bit values with 6-bit scales; its two half scales read
// as one half2 too
#define QK_SUPER 256
typedef struct {
    QUANT_EXTENSION union {
        struct {
            half d;     // scale of the sub-block scales
            half dmin;  // scale of the sub-block minimums
        };
        half2 dm;
    };
    uint8_t scales[QK_SUPER / 32];
    uint8_t qs[QK_SUPER / 2];
} block_q4_super;
static_assert(sizeof(block_q4_super) == 2 * sizeof(half) + QK_SUPER / 32 + QK_SUPER / 2, "wrong super-block size");

enum qtype { QTYPE_Q4_0 = 2, QTYPE_Q8_0 = 8 };

typedef void (*dequantize_kernel_t)(const void * vx, const int64_t ib, const int iqs, dfloat2 & v);

static __device__ __forceinline__ void dequantize_q4_0(const void * vx, const int64_t ib, const int iqs, dfloat2 & v) {
    const block_q4_0 * x = (const block_q4_0 *) vx;
    const dfloat d = x[ib].d;
    const int vui = x[ib].qs[iqs];
    v.x = __int2half_rn(vui & 0xF);
    v.y = __int2half_rn(vui >> 4);
    v = __hsub2(v, __floats2half2_rn(8.0f, 8.0f));
    v = __hmul2(v, __halves2half2(d, d));
}

static __device__ __forceinline__ void dequantize_q8_0(const void * vx, const int64_t ib, const int iqs, dfloat2 & v) {
    const block_q8_0 * x = (const block_q8_0 *) vx;
    const dfloat d = x[ib].d;
    v.x = __int2half_rn(x[ib].qs[iqs + 0]);
    v.y = __int2half_rn(x[ib].qs[iqs + 1]);
    v = __hmul2(v, __halves2half2(d, d));
}

template <int qk, int qr, dequantize_kernel_t dequantize_kernel, typename dst_t>
static __global__ void dequantize_block(const void * __restrict__ vx, dst_t * __restrict__ y, const int64_t k) {
    const int64_t i = 2 * ((int64_t) blockDim.x * blockIdx.x + threadIdx.x);
    if (i >= k) {
        return;
    }
    const int64_t ib = i / qk;           // block index
    const int64_t iqs = (i % qk) / qr;   // quant index
    const int64_t iybs = i - i % qk;     // y block start index
    const int64_t y_offset = qr == 1 ? 1 : qk / 2;

    dfloat2 v;
    dequantize_kernel(vx, ib, iqs, v);
    y[iybs + iqs + 0] = __half2float(v.x);
    y[iybs + iqs + y_offset] = __half2float(v.y);
}

typedef float (*vec_dot_t)(const void * vx, const float * y, int ib, int j);

static __device__ __forceinline__ float vec_dot_q4_0(const void * vx, const float * y, int ib, int j) {
    const block_q4_0 * x = (const block_q4_0 *) vx;
    const int q = x[ib].qs[j];
    return __half2float(x[ib].d) * (((q & 0xF) - 8) * y[j] + ((q >> 4) - 8) * y[j + QK4_0 / 2]);
}

static __device__ __forceinline__ float vec_dot_q8_0(const void * vx, const float * y, int ib, int j) {
    const block_q8_0 * x = (const block_q8_0 *) vx;
    return __half2float(x[ib].d) * (x[ib].qs[j] * y[j] + x[ib].qs[j + QK8_0 / 2] * y[j + QK8_0 / 2]);
}

constexpr __device__ vec_dot_t get_vec_dot(qtype type) {
    return type == QTYPE_Q4_0 ? vec_dot_q4_0 :
        type == QTYPE_Q8_0 ? vec_dot_q8_0 :
        nullptr;
}

// tile loaders of the matrix-matrix path, their addresses in a traits table; they read the
// block. A call through a vec_dot_t (4 arguments, its value used) can run none of them
typedef void (*load_tiles_t)(const char * x, int * tile, int kbx0, int i_max, int stride);

template <int rows>
static __device__ __forceinline__ void load_tiles_q4_0(const char * x, int * tile, int kbx0, int i_max, int stride) {
    for (int i = threadIdx.y; i < rows && i < i_max; i += blockDim.y) {
        tile[i * WARP_SIZE + threadIdx.x] = ((const int *) x)[(kbx0 + i) * stride + threadIdx.x];
    }
}

template <qtype type> struct mmq_traits;
template <> struct mmq_traits<QTYPE_Q4_0> {
    static constexpr load_tiles_t load_tiles = load_tiles_q4_0<64>;
};

constexpr __host__ __device__ int get_qk(qtype type) {
    return type == QTYPE_Q4_0 ? QK4_0 : QK8_0;
}

static __device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(0xffffffff, x, offset, 32);
    }
    return x;
}

// one warp per row: blockDim = (32, nrows_per_block)
template <qtype type>
static __global__ void mul_mat_vec_q(const void * __restrict__ vx, const float * __restrict__ vy, float * __restrict__ dst,
                                     const int ncols, const int nrows) {
    constexpr int qk = get_qk(type);
    constexpr vec_dot_t vec_dot = get_vec_dot(type);
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= nrows) {
        return;
    }
    const int blocks_per_row = ncols / qk;
    float tmp = 0.0f;
    for (int i = threadIdx.x; i < blocks_per_row * (qk / 2); i += WARP_SIZE) {
        const int ibx = row * blocks_per_row + i / (qk / 2);
        const int j = i % (qk / 2);
        tmp += vec_dot(vx, vy + (i / (qk / 2)) * qk, ibx, j);
    }
    tmp = warp_reduce_sum(tmp);
    if (threadIdx.x == 0) {
        dst[row] = tmp;
    }
}

template <int block_size>
static __global__ void rms_norm_f32(const float * x, float * dst, const int ncols, const float eps) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int tid = threadIdx.x;
    float tmp = 0.0f;
    for (int col = tid; col < ncols; col += block_size) {
        const float xi = x[row * ncols + col];
        tmp += xi * xi;
    }
    tmp = warp_reduce_sum(tmp);
    if (block_size > WARP_SIZE) {
        __shared__ float s_sum[32];
        const int warp_id = threadIdx.x / WARP_SIZE;
        const int lane_id = threadIdx.x % WARP_SIZE;
        if (lane_id == 0) {
            s_sum[warp_id] = tmp;
        }
        __syncthreads();
        tmp = lane_id < block_size / WARP_SIZE ? s_sum[lane_id] : 0.0f;
        tmp = warp_reduce_sum(tmp);
    }
    const float mean = tmp / ncols;
    const float scale = rsqrtf(mean + eps);
    for (int col = tid; col < ncols; col += block_size) {
        dst[row * ncols + col] = scale * x[row * ncols + col];
    }
}

// one block of 32 threads per super-block, each thread 8 values of its sub-block
template <typename dst_t>
static __global__ void dequantize_block_q4_super(const void * __restrict__ vx, dst_t * __restrict__ yy) {
    const block_q4_super * x = (const block_q4_super *) vx;
    const int64_t i = blockIdx.x;
    const int tid = threadIdx.x;
    const int sub = tid / 4;         // sub-block 0..7
    const int part = tid % 4;        // 8 of its 32 values
    const float2 dm = __half22float2(x[i].dm);
    const float scale = dm.x * (x[i].scales[sub] & 0x3F);
    const float minimum = dm.y * (x[i].scales[sub] >> 6);
    dst_t * y = yy + i * QK_SUPER + sub * 32 + part * 8;
    const uint8_t * q = x[i].qs + sub * 16 + part * 4;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
        y[2 * l + 0] = scale * (q[l] & 0xF) - minimum;
        y[2 * l + 1] = scale * (q[l] >> 4) - minimum;
    }
}
