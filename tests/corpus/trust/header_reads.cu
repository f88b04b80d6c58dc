// Kernels that read the block through code of a header hfuse keeps as an #include
// (libcu++'s PTX wrappers): only a C++ front end sees what that code reads.
#include <cuda/ptx>

// %tid.x through libcu++: correct only where the fused block runs this kernel's whole block
__global__ void tid_ptx(unsigned* out) {
  out[blockIdx.x * 128 + threadIdx.x] = cuda::ptx::get_sreg_tid_x() * 3u + 1u;
}

// %ntid.x (blockDim) through libcu++: no fused layout keeps it
__global__ void ntid_ptx(unsigned* out) {
  out[blockIdx.x * 128 + threadIdx.x] = cuda::ptx::get_sreg_ntid_x();
}

// the same read behind the user's own alias and helper template
namespace ptx = cuda::ptx;
template <class T>
__device__ T my_thread() { return static_cast<T>(ptx::get_sreg_tid_x()); }
__global__ void tid_helper(unsigned* out) {
  out[blockIdx.x * 128 + threadIdx.x] = my_thread<unsigned>() + 7u;
}

// the lane id reads nothing a warp-aligned part changes
__global__ void lane_ptx(unsigned* out) {
  out[blockIdx.x * 128 + threadIdx.x] = cuda::ptx::get_sreg_laneid();
}

__global__ void scale(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
