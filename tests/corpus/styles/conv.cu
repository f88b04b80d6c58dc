// Depthwise causal convolution over time (as state-space model code writes it): a width
// from a template, a window kept in registers, a channel-last variant.
#include <cuda_bf16.h>

template <int kWidth, typename input_t, typename weight_t>
__global__ void causal_conv1d_fwd(const input_t* __restrict__ x, const weight_t* __restrict__ weight,
                                  const weight_t* __restrict__ bias, input_t* __restrict__ out, int seqlen,
                                  bool silu) {
  const int channel = blockIdx.y;
  const int dim = gridDim.y;
  float w[kWidth];
#pragma unroll
  for (int k = 0; k < kWidth; ++k) w[k] = static_cast<float>(weight[channel * kWidth + k]);
  const float b = bias != nullptr ? static_cast<float>(bias[channel]) : 0.f;
  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < seqlen; t += blockDim.x * gridDim.x) {
    float acc = b;
#pragma unroll
    for (int k = 0; k < kWidth; ++k) {
      const int src = t - (kWidth - 1) + k;
      if (src >= 0) acc += w[k] * static_cast<float>(x[(static_cast<long>(src)) * dim + channel]);
    }
    if (silu) acc = acc / (1.f + __expf(-acc));
    out[static_cast<long>(t) * dim + channel] = static_cast<input_t>(acc);
  }
}

template <int kWidth>
__global__ void conv_state_update(float* __restrict__ state, const float* __restrict__ x_new, int dim) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= dim) return;
  float* s = state + c * (kWidth - 1);
#pragma unroll
  for (int k = 0; k < kWidth - 2; ++k) s[k] = s[k + 1];
  s[kWidth - 2] = x_new[c];
}
