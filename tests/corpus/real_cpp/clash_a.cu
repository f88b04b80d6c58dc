// Types, a typedef and a constant that clash_b.cu defines differently under the same names:
// compiled apart, each file's kernel meant its own. Fused, each part gets its own copy.
typedef float real;
constexpr int kScale = 2;
struct Params {
  real alpha;
  int n;
};

__device__ real apply(real x, const Params& p) { return x * p.alpha * kScale; }

__global__ void ka(const real* __restrict__ in, real* __restrict__ out, Params p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) out[i] = apply(in[i], p);
}
