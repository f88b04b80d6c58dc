// Training kernels written against include/train_common.cuh: a 32 x rows block with rows
// staged in dynamic shared memory and an early return after the barrier, an optimiser
// whose template helper strides tensors by blockIdx.y, a loss kernel whose template
// parameters all have defaults (fused without arguments) and which takes a
// std::bool_constant, a norm through block_combine<lane_sum>, packed residual adds.
#include "train_common.cuh"
#include <assert.h>
#include <type_traits>

__global__ void row_layernorm(act_t* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                              const act_t* __restrict__ in, const act_t* __restrict__ gain,
                              const act_t* __restrict__ shift, int rows, int width) {
  assert(blockDim.x == LANES);
  extern __shared__ char staging[];
  actx16* s_gain = reinterpret_cast<actx16*>(staging);
  actx16* s_shift = s_gain + width / actx16::count;
  actx16* s_row = s_gain + (2 + threadIdx.y) * width / actx16::count;
  for (int i = (threadIdx.x + LANES * threadIdx.y) * actx16::count; i < width;
       i += blockDim.y * LANES * actx16::count) {
    s_gain[i / actx16::count] = load16(gain + i);
    s_shift[i / actx16::count] = load16(shift + i);
  }
  __syncthreads();
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  in += row * width;
  out += row * width;
  float sum = 0.f;
  for (int c = threadIdx.x * actx16::count; c < width; c += LANES * actx16::count) {
    const actx16 v = load16_stream(in + c);
    for (int k = 0; k < actx16::count; ++k) sum += (float)v[k];
    s_row[c / actx16::count] = v;
  }
  const float m = lane_sum(sum) / width;
  float var = 0.f;
  for (int c = threadIdx.x * actx16::count; c < width; c += LANES * actx16::count) {
    const actx16 v = s_row[c / actx16::count];
    for (int k = 0; k < actx16::count; ++k) var += ((float)v[k] - m) * ((float)v[k] - m);
  }
  const float s = rsqrtf(lane_sum(var) / width + 1e-5f);
  for (int c = threadIdx.x * actx16::count; c < width; c += LANES * actx16::count) {
    const actx16 v = s_row[c / actx16::count];
    const actx16 g = s_gain[c / actx16::count];
    const actx16 b = s_shift[c / actx16::count];
    actx16 o;
    for (int k = 0; k < actx16::count; ++k) o[k] = (act_t)(s * ((float)v[k] - m) * (float)g[k] + (float)b[k]);
    store16_stream(out + c, o);
  }
  if (threadIdx.x == 0 && mean != nullptr) __stcs(mean + row, m);
  if (threadIdx.x == 0 && rstd != nullptr) __stcs(rstd + row, s);
}

template <typename TParam, typename TGrad>
__device__ void adam_step(TParam* param, float* master, TGrad* grad, float* m1, float* m2, size_t n, float lr,
                          float b1, float b2, float c1, float c2, float eps, float decay, float scale, unsigned int seed) {
  const size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = scale * (float)grad[i];
  const float m = mix(g, m1[i], b1);
  const float v = mix(g * g, m2[i], b2);
  m1[i] = m;
  m2[i] = v;
  const float old = master != NULL ? master[i] : (float)param[i];
  const float updated = old - lr * ((m / c1) / (sqrtf(v / c2) + eps) + decay * old);
  round_to(updated, &param[i], seed);
  if (master != NULL) master[i] = updated;
}

template <typename TParam, typename TGrad>
__global__ void adam_slices(TParam* param, float* master, TGrad* grad, float* m1, float* m2, size_t n,
                            ptrdiff_t param_stride, ptrdiff_t grad_stride, ptrdiff_t state_stride, float lr, float b1,
                            float b2, float c1, float c2, float eps, float decay, float scale, unsigned int seed) {
  adam_step(param + blockIdx.y * param_stride, master ? master + blockIdx.y * state_stride : NULL,
            grad + blockIdx.y * grad_stride, m1 + blockIdx.y * state_stride, m2 + blockIdx.y * state_stride, n, lr,
            b1, b2, c1, c2, eps, decay, scale, seed);
}

struct RowSoftmax {
  float inv_sum;
  float max;
};

// online softmax statistics of one row, packed loads from its end backwards
__device__ RowSoftmax row_softmax(int64_t row, const act_t* logits, int vocab, int padded) {
  const act_t* x = logits + row * padded;
  float m = -INFINITY, s = 0.f;
  for (int i = threadIdx.x; i < vocab / (int)actx16::count; i += blockDim.x) {
    const actx16 v = load16(x + i * actx16::count);
    for (int k = 0; k < actx16::count; ++k) {
      const float f = (float)v[k];
      const float previous = m;
      m = fmaxf(m, f);
      s = s * expf(previous - m) + expf(f - m);
    }
  }
  const float row_max = block_combine<lane_max>(m, false, -INFINITY);
  s *= expf(m - row_max);
  return RowSoftmax{1.f / block_combine<lane_sum>(s), row_max};
}

template <bool kWriteGrad = true, bool kWriteProbs = false>
__global__ void __launch_bounds__(1024, 2) softmax_xent(act_t* logits, float* losses, act_t* probs, const float dloss,
                                                        const int* targets, int vocab, int padded,
                                                        std::bool_constant<kWriteGrad>) {
  const int64_t row = gridDim.x - (blockIdx.x + 1);
  const int target = targets[row];
  const RowSoftmax sm = row_softmax(row, logits, vocab, padded);
  if (threadIdx.x == 0) losses[row] -= logf(expf((float)logits[row * padded + target] - sm.max) * sm.inv_sum);
  for (int i = threadIdx.x; i < vocab / (int)actx16::count; i += blockDim.x) {
    actx16 v = load16(logits + row * padded + i * actx16::count);
    actx16 p;
    for (int k = 0; k < actx16::count; ++k) {
      const float prob = expf((float)v[k] - sm.max) * sm.inv_sum;
      p[k] = (act_t)prob;
      v[k] = (act_t)((prob - (i * (int)actx16::count + k == target ? 1.f : 0.f)) * dloss);
    }
    if (kWriteGrad) store16(logits + row * padded + i * actx16::count, v);
    if (kWriteProbs) store16(probs + row * padded + i * actx16::count, p);
  }
}

__global__ void norm_squared(float* out, const act_t* data, size_t count, ptrdiff_t stride) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += blockDim.x * gridDim.x) {
    const float v = (float)data[i + blockIdx.y * stride];
    acc += v * v;
  }
  const float total = block_combine<lane_sum>(acc);
  if (threadIdx.x == 0) out[blockIdx.y * gridDim.x + blockIdx.x] += total;
}

__global__ void residual_add(act_t* out, const act_t* a, const act_t* b) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * actx16::count;
  const actx16 x = load16_stream(a + i);
  const actx16 y = load16_stream(b + i);
  actx16 o;
  for (int k = 0; k < x.count; ++k) o[k] = (act_t)((float)x[k] + (float)y[k]);
  store16(out + i, o);
}

void residual_forward(act_t* out, const act_t* a, const act_t* b, int n, cudaStream_t stream) {
  const int threads = 256;
  assert(n % (threads * actx16::count) == 0);
  residual_add<<<n / (threads * actx16::count), threads, 0, stream>>>(out, a, b);
  CHECK_CUDA(cudaGetLastError());
}
