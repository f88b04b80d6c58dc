// A quantisation kernel in the style of a production library: statistics kept by a class
// template with one specialisation per kind, a member template that reduces across the block
// through a warp tile handed down (its meta_group_size() counts the block's warps), functions
// declared first and defined later, and the statistics object an `auto` a function returned.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

namespace qlib {
constexpr int kWarp = 32;
enum class Kind { Symmetric, Asymmetric };

namespace reduce {
__device__ __forceinline__ float warp_max(cg::thread_block_tile<kWarp>& warp, float v)
{
    for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, warp.shfl_xor(v, offset));
    return v;
}

// the block's maximum: each warp's, then the first warp's over the warps' (as many as there are)
__device__ void block_max(cg::thread_block& tb, cg::thread_block_tile<kWarp>& warp, float& v)
{
    __shared__ float partial[32];
    v = warp_max(warp, v);
    if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
    tb.sync();
    const int warps = warp.meta_group_size();
    v = warp.thread_rank() < warps ? partial[warp.thread_rank()] : -INFINITY;
    v = warp_max(warp, v);
    tb.sync();
}
}  // namespace reduce

template <Kind kind>
class Stats {
public:
    __device__ void update(float v);
};

template <>
class Stats<Kind::Symmetric> {
public:
    float max_abs;
    __device__ Stats() : max_abs(0.f) {}
    __device__ void update(float v) { max_abs = fmaxf(max_abs, fabsf(v)); }

    template <int bits>
    __device__ float scale(cg::thread_block& tb, cg::thread_block_tile<kWarp>& warp)
    {
        float m = max_abs;
        reduce::block_max(tb, warp, m);
        return m > 0.f ? m / float((1 << (bits - 1)) - 1) : 1.f;
    }
};

template <Kind kind, int items>
__device__ Stats<kind> serial_stats(const float* values);

// the row's scale: declared above, its statistics are defined below (as a header orders them)
template <int items>
__device__ float row_scale(cg::thread_block& tb, cg::thread_block_tile<kWarp>& warp, const float* values)
{
    auto stats = serial_stats<Kind::Symmetric, items>(values);
    return stats.template scale<8>(tb, warp);
}

template <Kind kind, int items>
__device__ Stats<kind> serial_stats(const float* values)
{
    Stats<kind> stats;
    for (int i = 0; i < items; i++) stats.update(values[i]);
    return stats;
}

// one block per row of blockDim.x * 4 values; int8 out, the row's scale out
__global__ void quantize_rows(const float* __restrict__ in, signed char* __restrict__ out, float* __restrict__ scales)
{
    cg::thread_block tb = cg::this_thread_block();
    cg::thread_block_tile<kWarp> warp = cg::tiled_partition<kWarp>(tb);
    constexpr int kItems = 4;
    const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kItems;
    float values[kItems];
    for (int i = 0; i < kItems; i++) values[i] = in[base + i];
    const float scale = row_scale<kItems>(tb, warp, values);
    for (int i = 0; i < kItems; i++) out[base + i] = static_cast<signed char>(rintf(values[i] / scale));
    if (threadIdx.x == 0) scales[blockIdx.x] = scale;
}
}  // namespace qlib

// the statistics object named with its namespace and the kernel's template argument
template <qlib::Kind kind>
__global__ void row_scales(const float* __restrict__ in, float* __restrict__ scales)
{
    cg::thread_block tb = cg::this_thread_block();
    cg::thread_block_tile<qlib::kWarp> warp = cg::tiled_partition<qlib::kWarp>(tb);
    qlib::Stats<kind> stats;
#pragma unroll
    for (int i = 0; i < 4; i++) stats.update(in[(blockIdx.x * blockDim.x + threadIdx.x) * 4 + i]);
    const float scale = stats.template scale<8>(tb, warp);
    if (threadIdx.x == 0) scales[blockIdx.x] = scale;
}
