// half_precision.cu -- a few FP16 kernels.
//
//   haxpy          y = a * x + y on packed pairs of halves (__half2), grid-stride
//   hdot_partial   dot product of two half vectors, accumulated in float; one
//                  partial result per block of HDOT_THREADS (128) threads
//   pack_half2     float2 -> __half2 with round-to-nearest
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define HDOT_THREADS 128

__global__ void haxpy(int n2, __half a, const __half2 *__restrict__ x, __half2 *__restrict__ y)
{
    const __half2 a2 = __half2half2(a);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += blockDim.x * gridDim.x)
        y[i] = __hfma2(a2, __ldg(&x[i]), y[i]);
}

__global__ void hdot_partial(const __half *__restrict__ a, const __half *__restrict__ b, float *partial, int n)
{
    __shared__ float s[HDOT_THREADS];

    float acc = 0.0f;
    for (int i = blockIdx.x * HDOT_THREADS + threadIdx.x; i < n; i += HDOT_THREADS * gridDim.x)
        acc += __half2float(a[i]) * __half2float(b[i]);
    s[threadIdx.x] = acc;
    __syncthreads();

#pragma unroll
    for (int stride = HDOT_THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride)
            s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

__global__ void pack_half2(const float2 *__restrict__ in, __half2 *__restrict__ out, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2)
        out[i] = __float22half2_rn(in[i]);
}
