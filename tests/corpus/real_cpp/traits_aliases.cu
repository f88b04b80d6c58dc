// A block-wide suffix scan of the user's own, written as a CUB-like class that reads
// threadIdx, reached through a kernel traits struct's member alias
// (`typename Ktraits::SuffixScanT(storage).Scan(...)`), as state-space-model scans write it.
// The traits struct names the class, so it gets a per-part copy too.
#include <cuda_fp16.h>

template <typename T, int kThreads>
struct BlockSuffixSum {
    struct TempStorage { T partial[kThreads]; };
    TempStorage& storage;
    __device__ explicit BlockSuffixSum(TempStorage& s) : storage(s) {}
    // inclusive suffix sums of one value a thread (a Hillis-Steele scan over shared memory)
    __device__ T Scan(T value) {
        const int tid = threadIdx.x;
        storage.partial[tid] = value;
        __syncthreads();
        for (int step = 1; step < kThreads; step <<= 1) {
            T add = tid + step < kThreads ? storage.partial[tid + step] : T(0);
            __syncthreads();
            storage.partial[tid] += add;
            __syncthreads();
        }
        return storage.partial[tid];
    }
};

template <int kThreads_, typename input_t_>
struct Scan_kernel_traits {
    using input_t = input_t_;
    static constexpr int kThreads = kThreads_;
    using SuffixScanT = BlockSuffixSum<float, kThreads>;
    static constexpr int kSmemSize = sizeof(typename SuffixScanT::TempStorage);
};

template <typename Ktraits>
__global__ __launch_bounds__(Ktraits::kThreads)
void suffix_scan_kernel(const typename Ktraits::input_t* __restrict__ x, float* __restrict__ out, int n) {
    extern __shared__ char smem_[];  // (Ktraits::kSmemSize bytes)
    auto& storage = *reinterpret_cast<typename Ktraits::SuffixScanT::TempStorage*>(smem_);
    const int i = blockIdx.x * Ktraits::kThreads + threadIdx.x;
    const float v = i < n ? float(x[i]) : 0.f;
    const float total = typename Ktraits::SuffixScanT(storage).Scan(v);
    typename Ktraits::SuffixScanT scanner(storage);
    const float twice = scanner.Scan(2.f * v);
    if (i < n) {
        out[i] = total + twice;
    }
}
