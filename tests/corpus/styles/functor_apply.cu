// Kernel templates whose code runs what the instance gives them: a functor with the kernel's
// trailing arguments (a parameter pack), and an activation given as a template argument.
#include <blocklib/chunk_ops.cuh>

// apex's and PyTorch's multi_tensor_apply: the functor gets the kernel's trailing arguments
template <typename F, typename... Args>
__global__ void chunk_apply(int chunk_size, F f, Args... args) {
  f(static_cast<int>(blockIdx.x), chunk_size, args...);
}

// the user's own functor: its reads of the block are rewritten in the part's copy
struct AddChunk {
  float value;
  __device__ void operator()(int chunk, int chunk_size, float* p, int n) const {
    const int begin = chunk * chunk_size;
    for (int i = begin + static_cast<int>(threadIdx.x); i < min(begin + chunk_size, n); i += blockDim.x) p[i] += value;
  }
};

// vLLM's act_kernel: the activation is a template argument
template <typename T, T (*ACT_FN)(const T&)>
__global__ void act_kernel(T* __restrict__ out, const T* __restrict__ in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = ACT_FN(in[i]);
}
