// Embedding lookups and scatters with 64-bit indices, a padding index, fp8 weights.
#include <cstdint>
#include <cuda_fp8.h>
#include <cuda_fp16.h>

template <typename scalar_t, typename index_t>
__global__ void embedding_gather(const index_t* __restrict__ indices, const scalar_t* __restrict__ weight,
                                 scalar_t* __restrict__ out, int64_t num_indices, int64_t dim, index_t padding_idx) {
  const int64_t row = blockIdx.x;
  if (row >= num_indices) return;
  const index_t idx = indices[row];
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x)
    out[row * dim + d] = idx == padding_idx ? scalar_t(0) : weight[static_cast<int64_t>(idx) * dim + d];
}

__global__ void embedding_backward_atomic(const int64_t* __restrict__ indices, const float* __restrict__ grad_out,
                                          float* __restrict__ grad_weight, int64_t num_indices, int dim) {
  const int64_t row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= num_indices) return;
  for (int d = threadIdx.x; d < dim; d += blockDim.x)
    atomicAdd(grad_weight + indices[row] * dim + d, grad_out[row * dim + d]);
}

__global__ void one_hot(const int32_t* __restrict__ labels, float* __restrict__ out, int n, int classes) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * classes) return;
  out[i] = (labels[i / classes] == i % classes) ? 1.f : 0.f;
}

__global__ void dequant_fp8_rows(const __nv_fp8_e4m3* __restrict__ w, const float* __restrict__ row_scale,
                                 __half* __restrict__ out, int rows, int cols) {
  const int r = blockIdx.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || c >= cols) return;
  out[r * cols + c] = __float2half(static_cast<float>(w[r * cols + c]) * row_scale[r]);
}
