/* warp_intrinsics.cu -- warp-synchronous building blocks with the *_sync
 * intrinsics (votes, shuffles, popc).
 *
 * warpCompact        keeps the positive values of every warp, packed at the start
 *                    of the warp's 32-slot segment; 192 threads per block
 * warpInclusiveScan  inclusive scan of every 32 values, block of 32 x 8 threads
 *                    (threadIdx.y selects the warp), plus per-warp vote flags
 *
 * All 32 lanes of a warp stay active through the intrinsics: lanes past the end
 * of the data only contribute neutral values.
 */
#include <cuda_runtime.h>

#define FULL_MASK 0xffffffffu
#define LANE_MASK_LT(lane) ((1u << (lane)) - 1u)

__global__ void warpCompact(const int *in, int *out, int *warpCounts, int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x & 31u;
    unsigned int warp = i >> 5;

    int v = (i < (unsigned)n) ? in[i] : 0;
    bool keep = (i < (unsigned)n) && v > 0;

    unsigned int mask = __ballot_sync(FULL_MASK, keep);
    int pos = __popc(mask & LANE_MASK_LT(lane));
    if (keep)
        out[warp * 32 + pos] = v;
    if (lane == 0)
        warpCounts[warp] = __popc(mask);
}

__global__ void warpInclusiveScan(const int *in, int *out, int *totals, int *flags, int n)
{
    const int lane = threadIdx.x;   // blockDim.x == 32
    const int w = blockIdx.x * blockDim.y + threadIdx.y;
    const int i = w * 32 + lane;

    const int x = i < n ? in[i] : 0;
    int v = x;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o)
            v += t;
    }
    if (i < n)
        out[i] = v;

    int anyNegative = __any_sync(FULL_MASK, x < 0);
    int allEven = __all_sync(FULL_MASK, (x & 1) == 0);
    int total = __shfl_sync(FULL_MASK, v, 31);
    if (lane == 0) {
        totals[w] = total;
        flags[w] = anyNegative | (allEven << 1);
    }
}
