// An overload set written across namespaces, as libraries grow one: the float overload comes
// from a detail namespace through a using-declaration, beside the namespace's own int overload.
// Each call picks its own: scale(float) doubles, scale(int) triples.
namespace detail {
__device__ inline float scale(float x) { return 2.0f * x; }
}  // namespace detail

namespace ops {
using detail::scale;
__device__ inline int scale(int x) { return 3 * x; }

__global__ void mixed(float* out, const int* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scale(static_cast<float>(in[i])) + static_cast<float>(scale(in[i] % 1000));
}
}  // namespace ops
