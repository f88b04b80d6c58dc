// Row statistics of a layer norm as normalisation libraries write them: a reducer class
// template that synchronises the block, Stats class templates (a partial specialisation for
// one warp) that own a reducer made in their constructors' initialiser lists, member aliases
// that shadow the class templates they name (`using Reducer = Reducer<T, WARPS>;`), a kernel
// traits struct that names them (`using Stats = rowstats::Stats<...>;`, read back as
// `typename Ktraits::Stats`), and a member template specialised outside its class template's
// explicit specialisations (`template <> template <class V, class R> R Pick<0>::of(...)`).
#include <cuda_fp16.h>

namespace rowstats {

template <int INDEX>
struct Pick {
    template <typename V, typename R>
    static inline __device__ R of(const V& v);
};

template <>
template <typename V, typename R>
inline __device__ R Pick<0>::of(const V& v) {
    return v.x;
}

template <>
template <typename V, typename R>
inline __device__ R Pick<1>::of(const V& v) {
    return v.y;
}

// sums a value of every thread: over each warp, then over the warps through shared memory
template <typename T, int WARPS>
struct Reducer {
    __device__ Reducer(T* smem, int warp, int lane) : smem_(smem), warp_(warp), lane_(lane) {}
    __device__ T sum(T v) {
        for (int offset = 16; offset > 0; offset >>= 1) {
            v += __shfl_xor_sync(0xffffffffu, v, offset);
        }
        if (lane_ == 0) {
            smem_[warp_] = v;
        }
        __syncthreads();
        T total = T(0);
        for (int w = 0; w < WARPS; ++w) {
            total += smem_[w];
        }
        __syncthreads();
        return total;
    }
    T* smem_;
    int warp_;
    int lane_;
};

template <typename T, int WARPS>
struct Stats {
    using Reducer = Reducer<T, WARPS>;  // (from here on in the struct, the alias)
    using stats_t = float2;

    __device__ Stats(T* smem, int lane) : reducer_(smem, threadIdx.x / 32, lane), n_(T(WARPS * 32)) {}

    __device__ stats_t compute(T v) {
        stats_t s;
        s.x = reducer_.sum(v) / n_;
        s.y = reducer_.sum(v * v) / n_;
        return s;
    }

    Reducer reducer_;
    T n_;
};

// one warp: no shared memory, no barrier
template <typename T>
struct Stats<T, 1> {
    using stats_t = float2;

    __device__ Stats(T*, int) {}

    __device__ stats_t compute(T v) {
        T m = v, m2 = v * v;
        for (int offset = 16; offset > 0; offset >>= 1) {
            m += __shfl_xor_sync(0xffffffffu, m, offset);
            m2 += __shfl_xor_sync(0xffffffffu, m2, offset);
        }
        return stats_t{m / T(32), m2 / T(32)};
    }
};

}  // namespace rowstats

template <typename T, int WARPS_>
struct Norm_traits {
    static constexpr int WARPS = WARPS_;
    static constexpr int THREADS = WARPS * 32;
    using compute_t = T;
    using Stats = rowstats::Stats<T, WARPS>;
};

// one row a block, one column a thread; writes the normalised row and the row's statistics
template <typename Ktraits>
__global__ __launch_bounds__(Ktraits::THREADS) void row_norm_kernel(const __half* __restrict__ x,
                                                                    __half* __restrict__ y,
                                                                    float2* __restrict__ stats_out, int cols) {
    using Stats = typename Ktraits::Stats;
    using compute_t = typename Ktraits::compute_t;
    __shared__ compute_t smem[Ktraits::WARPS];
    const int row = blockIdx.x;
    const int col = threadIdx.x;
    Stats stats(smem, col % 32);
    const compute_t v = col < cols ? __half2float(x[row * cols + col]) : compute_t(0);
    const typename Stats::stats_t s = stats.compute(v);
    const float mean = rowstats::Pick<0>::of<float2, float>(s);
    const float var = rowstats::Pick<1>::of<float2, float>(s) - mean * mean;
    if (col < cols) {
        y[row * cols + col] = __float2half((v - mean) * rsqrtf(var + 1e-5f));
    }
    if (col == 0) {
        stats_out[row] = s;
    }
}
