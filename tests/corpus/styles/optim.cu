// Optimiser steps as training libraries write them: functor structs per optimiser, a
// non-type enum template parameter, multi-tensor style pointers in a struct, aliases.
#include <cstdint>

namespace optim {

enum class Kind : uint8_t { SGD, Momentum, Adam };

struct AdamHyper {
  float lr, beta1, beta2, eps, weight_decay;
  int step;
};

template <Kind K>
struct Update;

template <>
struct Update<Kind::SGD> {
  __device__ static void apply(float& p, float g, float*, float*, const AdamHyper& h) { p -= h.lr * g; }
};

template <>
struct Update<Kind::Momentum> {
  __device__ static void apply(float& p, float g, float* m, float*, const AdamHyper& h) {
    *m = h.beta1 * *m + g;
    p -= h.lr * *m;
  }
};

template <>
struct Update<Kind::Adam> {
  __device__ static void apply(float& p, float g, float* m, float* v, const AdamHyper& h) {
    g += h.weight_decay * p;
    *m = h.beta1 * *m + (1.f - h.beta1) * g;
    *v = h.beta2 * *v + (1.f - h.beta2) * g * g;
    const float mhat = *m / (1.f - powf(h.beta1, static_cast<float>(h.step)));
    const float vhat = *v / (1.f - powf(h.beta2, static_cast<float>(h.step)));
    p -= h.lr * mhat / (sqrtf(vhat) + h.eps);
  }
};

template <int kTensors>
struct TensorList {
  float* params[kTensors];
  const float* grads[kTensors];
  float* m[kTensors];
  float* v[kTensors];
  int sizes[kTensors];
};

// blockIdx.y picks the tensor; a grid-stride loop covers it
template <Kind K, int kTensors>
__global__ void multi_tensor_step(TensorList<kTensors> list, AdamHyper h) {
  const int t = blockIdx.y;
  const int n = list.sizes[t];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float p = list.params[t][i];
    Update<K>::apply(p, list.grads[t][i], list.m[t] + i, list.v[t] + i, h);
    list.params[t][i] = p;
  }
}

using GradT = float;
__global__ void clip_grad(GradT* __restrict__ g, int n, GradT max_norm_scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g[i] = fminf(fmaxf(g[i] * max_norm_scale, -1.f), 1.f);
}

}  // namespace optim
