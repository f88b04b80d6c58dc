// An elementwise kernel template over a functor, as ML libraries write it: the functor
// and the type it uses are named only by the kernel's template arguments.
namespace ops {
typedef float acc_t;
struct Scale {
  __device__ acc_t operator()(acc_t v) const { return v * 3.0f + 1.0f; }
};
}  // namespace ops

template <typename Op, typename T>
__global__ void apply(T* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = Op()(data[i]);
}

__global__ void negate(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = -data[i];
}
