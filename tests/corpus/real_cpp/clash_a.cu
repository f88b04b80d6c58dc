// Types, a typedef and a constant that clash_b.cu defines differently under the same names:
// compiled apart, each file's kernel meant its own. Fused, each part gets its own copy.
typedef float real;
template <class T> constexpr T kHalf = T(1) / T(2);  // (an initialiser that calls: no prototype)
constexpr int kScale = 2;
struct Params {
  real alpha;
  int n;
};

// an enum and a member reached through its class's name, as both files name them
enum Rounding { kNearest = 0, kDown = 1 };
struct Tile { static constexpr int width = 4; };

__device__ real apply(real x, const Params& p) { return x * p.alpha * kScale; }
__device__ int tile_of(int i, Rounding r) { return i / Tile::width + (r == kDown); }

__global__ void ka(const real* __restrict__ in, real* __restrict__ out, Params p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) out[i] = apply(in[i], p) * kHalf<real> + tile_of(i, kDown);
}
