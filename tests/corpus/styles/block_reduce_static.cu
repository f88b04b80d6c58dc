// Block reductions in the style of an inference library: warp and block sums whose shared
// scratch is a function-local static __shared__ array of a template helper, trait families
// (num_elems, packed_as) by explicit and partial specialisation, cuda_cast specialisations,
// overloads of to_float, an ldg wrapper, and the instantiations written out in the file.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <assert.h>
#define FINAL_MASK 0xffffffff
#define ENABLE_BF16
template<typename T> inline __device__ T ldg(const T* val) { return __ldg(val); }

namespace fastertransformer {

template<typename T>
struct num_elems;
template<>
struct num_elems<float> { static constexpr int value = 1; };
template<>
struct num_elems<float2> { static constexpr int value = 2; };
template<>
struct num_elems<half2> { static constexpr int value = 2; };
#ifdef ENABLE_BF16
template<>
struct num_elems<__nv_bfloat162> { static constexpr int value = 2; };
#endif

template<typename T, int num>
struct packed_as;
template<typename T>
struct packed_as<T, 1> { using type = T; };
template<>
struct packed_as<half, 2> { using type = half2; };
template<>
struct packed_as<float, 2> { using type = float2; };
template<>
struct packed_as<half2, 1> { using type = half; };
template<>
struct packed_as<float2, 1> { using type = float; };

template<typename T>
inline __device__ T cuda_cast(float v);
template<>
inline __device__ float cuda_cast<float>(float v) { return v; }
template<>
inline __device__ half cuda_cast<half>(float v) { return __float2half(v); }
#ifdef ENABLE_BF16
template<>
inline __device__ __nv_bfloat16 cuda_cast<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
#endif

inline __device__ float to_float(float v) { return v; }
inline __device__ float to_float(half v) { return __half2float(v); }
#ifdef ENABLE_BF16
inline __device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
#endif

template<typename T>
__inline__ __device__ T warpReduceSum(T val)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1)
        val += __shfl_xor_sync(FINAL_MASK, val, mask, 32);
    return val;
}

/* Calculate the sum of all elements in a block */
template<typename T>
__inline__ __device__ T blockReduceSum(T val)
{
    static __shared__ T shared[32];
    int                 lane = threadIdx.x & 0x1f;
    int                 wid  = threadIdx.x >> 5;

    val = warpReduceSum<T>(val);

    if (lane == 0)
        shared[wid] = val;

    __syncthreads();

    // Modify from blockDim.x << 5 to blockDim.x / 32. to prevent
    // blockDim.x is not divided by 32
    val = (threadIdx.x < (blockDim.x / 32.f)) ? shared[lane] : (T)(0.0f);
    val = warpReduceSum<T>(val);

    return val;
}

template<typename T, int NUM>
__inline__ __device__ T warpReduceSumV2(T* val)
{
#pragma unroll
    for (int i = 0; i < NUM; i++) {
#pragma unroll
        for (int mask = 16; mask > 0; mask >>= 1)
            val[i] += __shfl_xor_sync(FINAL_MASK, val[i], mask, 32);
    }
    return (T)(0.0f);
}

template<typename T, int NUM>
__inline__ __device__ T blockReduceSumV2(T* val)
{
    static __shared__ T shared[NUM][33];
    int                 lane = threadIdx.x & 0x1f;
    int                 wid  = threadIdx.x >> 5;

    warpReduceSumV2<T, NUM>(val);

    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < NUM; i++) {
            shared[i][wid] = val[i];
        }
    }

    __syncthreads();

    bool is_mask = threadIdx.x < (blockDim.x / 32.f);
#pragma unroll
    for (int i = 0; i < NUM; i++) {
        val[i] = is_mask ? shared[i][lane] : (T)(0.0f);
    }
    warpReduceSumV2<T, NUM>(val);
    return (T)0.0f;
}

template<typename T>
__global__ void generalLayerNorm(
    const T* __restrict input, const T* __restrict gamma, const T* __restrict beta, T* output, const float layernorm_eps, int m, int n)
{
    const int tid = threadIdx.x;

    __shared__ float s_mean;
    __shared__ float s_variance;
    float            mean     = 0.0f;
    float            variance = 0.0f;

    float local_sum = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) {
        local_sum += (float)(ldg(&input[blockIdx.x * n + i]));
    }

    mean = blockReduceSum(local_sum);

    if (threadIdx.x == 0) {
        s_mean = mean / n;
    }
    __syncthreads();

    float local_var_sum = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) {
        float diff = (float)(ldg(&input[blockIdx.x * n + i])) - s_mean;
        local_var_sum += diff * diff;
    }
    variance = blockReduceSum(local_var_sum);

    if (threadIdx.x == 0) {
        s_variance = rsqrtf(variance / n + layernorm_eps);
    }
    __syncthreads();

    for (int i = tid; i < n; i += blockDim.x) {
        float beta_val = (beta == nullptr) ? 0.0f : (float)ldg(&beta[i]);
        output[blockIdx.x * n + i] =
            (T)((((float)input[blockIdx.x * n + i] - s_mean) * s_variance) * (float)(ldg(&gamma[i])) + beta_val);
    }
}

template<typename T, int ITEMS>
__global__ void rmsNormV2(const T* __restrict input, const T* __restrict gamma, T* output, float eps, int n)
{
    __shared__ float s_var;
    float sums[1] = {0.f};
    float vals[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = threadIdx.x + k * blockDim.x;
        vals[k] = i < n ? to_float(input[blockIdx.x * n + i]) : 0.f;
        sums[0] += vals[k] * vals[k];
    }
    blockReduceSumV2<float, 1>(sums);
    if (threadIdx.x == 0) s_var = rsqrtf(sums[0] / n + eps);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < n) output[blockIdx.x * n + i] = cuda_cast<T>(vals[k] * s_var * to_float(gamma[i]));
    }
}

template __global__ void generalLayerNorm<float>(const float*, const float*, const float*, float*, const float, int, int);
template __global__ void rmsNormV2<half, 4>(const half*, const half*, half*, float, int);
template __global__ void rmsNormV2<__nv_bfloat16, 2>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, float, int);

}  // namespace fastertransformer
