// An inference library's conversion and memory-access layer: explicit specialisations whose
// template arguments are deduced from the declaration (`template <> float to(__half v)`), a
// primary that calls its own name and never runs, access sizes and an enum policy as template
// arguments with a default, inline PTX loads, cooperative-groups tiles through an alias.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <stdint.h>

namespace cg = cooperative_groups;

#define DS_D_INLINE __device__ __forceinline__
#define DS_HD_INLINE __host__ __device__ __forceinline__

namespace conversion {
template <typename TO, typename FROM>
DS_D_INLINE TO to(FROM val)
{
    return to(val);
}
template <>
DS_D_INLINE float to(__half val)
{
    return __half2float(val);
}
template <>
DS_D_INLINE float to(__nv_bfloat16 val)
{
    return __bfloat162float(val);
}
template <>
DS_D_INLINE float to(float val)
{
    return val;
}
template <>
DS_D_INLINE __half to(float val)
{
    return __float2half_rn(val);
}
template <>
DS_D_INLINE __nv_bfloat16 to(float val)
{
    return __float2bfloat16_rn(val);
}
template <>
DS_D_INLINE int8_t to(float val)
{
    return static_cast<int8_t>(__float2int_rn(val));
}
}  // namespace conversion

namespace mem_access {
enum class LoadPolicy { CacheAll, CacheGlobal, CacheStreaming };

template <int AccessSize, LoadPolicy policy = LoadPolicy::CacheAll>
DS_D_INLINE void load_global(void* dst, const void* src);

template <>
DS_D_INLINE void load_global<16>(void* dst, const void* src)
{
    uint4* data = reinterpret_cast<uint4*>(dst);
    asm volatile("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(data[0].x), "=r"(data[0].y), "=r"(data[0].z), "=r"(data[0].w)
                 : "l"(src));
}

template <>
DS_D_INLINE void load_global<16, LoadPolicy::CacheGlobal>(void* dst, const void* src)
{
    uint4* data = reinterpret_cast<uint4*>(dst);
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(data[0].x), "=r"(data[0].y), "=r"(data[0].z), "=r"(data[0].w)
                 : "l"(src));
}

template <>
DS_D_INLINE void load_global<8>(void* dst, const void* src)
{
    uint2* data = reinterpret_cast<uint2*>(dst);
    asm volatile("ld.global.ca.v2.u32 {%0, %1}, [%2];\n" : "=r"(data[0].x), "=r"(data[0].y) : "l"(src));
}

template <int AccessSize>
DS_D_INLINE void store_global(void* dst, const void* src);

template <>
DS_D_INLINE void store_global<16>(void* dst, const void* src)
{
    const uint4* data = reinterpret_cast<const uint4*>(src);
    asm volatile("st.global.wb.v4.u32 [%0], {%1, %2, %3, %4};\n"
                 :
                 : "l"(dst), "r"(data[0].x), "r"(data[0].y), "r"(data[0].z), "r"(data[0].w)
                 : "memory");
}
}  // namespace mem_access

namespace reduce {
enum class ROpType { Add, Max, Min };

template <ROpType Op>
DS_D_INLINE float element(const float lhs, const float rhs);

template <>
DS_D_INLINE float element<ROpType::Add>(const float lhs, const float rhs)
{
    return lhs + rhs;
}
template <>
DS_D_INLINE float element<ROpType::Max>(const float lhs, const float rhs)
{
    return fmaxf(lhs, rhs);
}

template <ROpType Op, int reduce_width = 32>
DS_D_INLINE void partitioned_block(cg::thread_block& tb, cg::thread_block_tile<32>& warp, float& val)
{
#pragma unroll
    for (int i = 1; i < reduce_width; i *= 2) {
        val = element<Op>(val, warp.shfl_xor(val, i));
    }
}
}  // namespace reduce

constexpr int granularity = 16;

// Scale each row by the inverse of its max magnitude, to int8.
template <typename T, int UNROLL>
__global__ void quantize_int8_rows(int8_t* __restrict__ out, float* __restrict__ scales, const T* __restrict__ in,
                              int elems_per_row)
{
    cg::thread_block tb = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(tb);
    constexpr int T_per_load = granularity / sizeof(T);
    const T* row = in + tb.group_index().x * elems_per_row;
    T local[UNROLL * T_per_load];
    float vmax = 0.f;
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const int idx = (u * tb.size() + tb.thread_index().x) * T_per_load;
        if (idx < elems_per_row) {
            mem_access::load_global<granularity>(local + u * T_per_load, row + idx);
#pragma unroll
            for (int j = 0; j < T_per_load; j++) vmax = fmaxf(vmax, fabsf(conversion::to<float>(local[u * T_per_load + j])));
        }
    }
    reduce::partitioned_block<reduce::ROpType::Max>(tb, warp, vmax);
    const float scale = vmax > 0.f ? 127.f / vmax : 1.f;
    if (warp.thread_rank() == 0 && tb.thread_index().x == 0) scales[tb.group_index().x] = 1.f / scale;
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const int idx = (u * tb.size() + tb.thread_index().x) * T_per_load;
        if (idx < elems_per_row) {
            int8_t q[T_per_load];
#pragma unroll
            for (int j = 0; j < T_per_load; j++) q[j] = conversion::to<int8_t>(conversion::to<float>(local[u * T_per_load + j]) * scale);
            for (int j = 0; j < T_per_load; j++) out[tb.group_index().x * elems_per_row + idx + j] = q[j];
        }
    }
}

// Residual add in the storage type through float, 16-byte accesses.
template <typename T>
__global__ void fused_residual_add(T* __restrict__ residual, const T* __restrict__ hidden, int n)
{
    constexpr int T_per_access = granularity / sizeof(T);
    const int base = (blockIdx.x * blockDim.x + threadIdx.x) * T_per_access;
    if (base + T_per_access > n) return;
    T r[T_per_access];
    T h[T_per_access];
    mem_access::load_global<granularity, mem_access::LoadPolicy::CacheGlobal>(r, residual + base);
    mem_access::load_global<granularity>(h, hidden + base);
#pragma unroll
    for (int j = 0; j < T_per_access; j++) {
        r[j] = conversion::to<T>(conversion::to<float>(r[j]) + conversion::to<float>(h[j]));
    }
    mem_access::store_global<granularity>(residual + base, r);
}
