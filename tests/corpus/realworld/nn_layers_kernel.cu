// nn_layers_kernel.cu -- forward passes of two layers of a small CNN framework.
//
// Every kernel is a 1-D grid-stride loop (the macro below), so any grid is
// correct; the framework launches NN_CUDA_NUM_THREADS threads per block and at
// most NN_MAXIMUM_NUM_BLOCKS blocks.
#include <algorithm>
#include <cfloat>
#include <cuda_runtime.h>

#define CUDA_1D_KERNEL_LOOP(i, n)                                  \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n);     \
       i += blockDim.x * gridDim.x)

const int NN_CUDA_NUM_THREADS = 512;
const int NN_MAXIMUM_NUM_BLOCKS = 4096;

inline int NN_GET_BLOCKS(const int n) {
  return std::min((n + NN_CUDA_NUM_THREADS - 1) / NN_CUDA_NUM_THREADS, NN_MAXIMUM_NUM_BLOCKS);
}

namespace nnops {

template <typename T>
__global__ void LeakyReluForward(const int count, const T* x, T* y, T alpha) {
  CUDA_1D_KERNEL_LOOP(i, count) {
    const T v = x[i];
    y[i] = v > T(0) ? v : alpha * v;
  }
}

// NCHW max pooling; indices[o] is the winner's offset within its input plane
// (first maximum in row-major window order).
template <typename T>
__global__ void MaxPool2dForwardNCHW(const int total, const T* input, const int channels,
                                     const int inH, const int inW, const int outH, const int outW,
                                     const int kH, const int kW, const int strideH, const int strideW,
                                     const int padH, const int padW, T* output, int* indices) {
  CUDA_1D_KERNEL_LOOP(o, total) {
    int rest = o;
    const int ox = rest % outW;
    rest /= outW;
    const int oy = rest % outH;
    rest /= outH;
    const int c = rest % channels;
    const int n = rest / channels;

    const int ty = oy * strideH - padH, tx = ox * strideW - padW;
    const int y0 = ty > 0 ? ty : 0, y1 = ty + kH < inH ? ty + kH : inH;
    const int x0 = tx > 0 ? tx : 0, x1 = tx + kW < inW ? tx + kW : inW;

    const T* plane = input + ((size_t)n * channels + c) * inH * inW;
    int arg = y0 * inW + x0;
    T best = plane[arg];
    for (int yy = y0; yy < y1; ++yy) {
      for (int xx = x0; xx < x1; ++xx) {
        const T v = plane[yy * inW + xx];
        if (v > best) {
          best = v;
          arg = yy * inW + xx;
        }
      }
    }
    output[o] = best;
    indices[o] = arg;
  }
}

template <typename T>
void leaky_relu_forward_gpu(const int count, const T* x, T* y, T alpha, cudaStream_t stream) {
  LeakyReluForward<T><<<NN_GET_BLOCKS(count), NN_CUDA_NUM_THREADS, 0, stream>>>(count, x, y, alpha);
}

template <typename T>
void max_pool_forward_gpu(const T* input, int num, int channels, int height, int width, int kernel, int stride,
                          int pad, T* output, int* indices, cudaStream_t stream) {
  const int outH = (height + 2 * pad - kernel) / stride + 1;
  const int outW = (width + 2 * pad - kernel) / stride + 1;
  const int total = num * channels * outH * outW;
  MaxPool2dForwardNCHW<T><<<NN_GET_BLOCKS(total), NN_CUDA_NUM_THREADS, 0, stream>>>(
      total, input, channels, height, width, outH, outW, kernel, kernel, stride, stride, pad, pad, output, indices);
}

template void leaky_relu_forward_gpu<float>(const int, const float*, float*, float, cudaStream_t);
template void leaky_relu_forward_gpu<double>(const int, const double*, double*, double, cudaStream_t);
template void max_pool_forward_gpu<float>(const float*, int, int, int, int, int, int, int, float*, int*,
                                          cudaStream_t);

}  // namespace nnops
