// Types whose member functions read the block and that declare constructors of their own,
// as block-reduction helpers of ML libraries do (once refused: "declares its own constructor
// or destructor and a member that reads the block"). Each part's copy of such a type takes
// the part's view of the block in every constructor, and every object is made with it.
// An aggregate initialised with values (WarpTile t{smem}) gets a constructor per number of
// values, setting the members as aggregate initialisation did.
template <typename T, int kWarps>
class BlockReducer {
 public:
  __device__ explicit BlockReducer(T* smem) : smem_(smem), lane_(threadIdx.x % 32), warp_(threadIdx.x / 32) {}
  __device__ BlockReducer(const BlockReducer& other) : smem_(other.smem_), lane_(other.lane_), warp_(other.warp_) {}
  template <typename U>
  __device__ BlockReducer(U* smem, int skip)
      : smem_(reinterpret_cast<T*>(smem) + skip), lane_(threadIdx.x % 32), warp_(threadIdx.x / 32) {}
  __device__ ~BlockReducer() {}

  __device__ T sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane_ == 0) smem_[warp_] = v;
    __syncthreads();
    T r = threadIdx.x < kWarps ? smem_[threadIdx.x] : T(0);
    if (warp_ == 0) {
      for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    }
    __syncthreads();
    return r;
  }

 private:
  T* smem_;
  int lane_, warp_;
};

struct Accum {
  float total;
  __device__ Accum() : total(0.f) {}
  __device__ Accum(float start) { total = start + (threadIdx.x & 3); }
  __device__ void add(float v) { total += v * (1 + (threadIdx.x & 1)); }
};

__global__ void row_sums(const float* x, float* out, int cols) {
  __shared__ float scratch[2 * 32];
  BlockReducer<float, 8> red(scratch);
  BlockReducer<float, 8> copy = red;
  auto second = BlockReducer<float, 8>(scratch, 32);
  float acc = 0.f, sq = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = x[blockIdx.x * cols + c];
    acc += v;
    sq += v * v;
  }
  const float s = copy.sum(acc);
  const float q = second.sum(sq);
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = s;
    out[2 * blockIdx.x + 1] = q;
  }
}

__global__ void accum_rows(const float* x, float* out, int cols) {
  Accum a;
  Accum b{1.f};
  Accum c(2.f);
  for (int col = threadIdx.x; col < cols; col += blockDim.x) {
    a.add(x[blockIdx.x * cols + col]);
    b.add(1.f);
    c.add(2.f);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a.total + b.total + c.total + Accum(3.f).total + Accum{}.total;
}

struct WarpTile {
  float* base;
  int ld = 33, pad;
  const float* src;
  int stride{2}, last = 1;
  __device__ float& at(int r) { return base[r * ld + threadIdx.x % 32]; }
};
template <typename T>
struct Pair {
  T a, b;
  __device__ T mix() const { return a * (threadIdx.x & 7) + b; }
};

__global__ void tile_rows(const float* x, float* y, int n) {
  __shared__ float smem[33 * 8];
  WarpTile t{smem};
  WarpTile u = {smem, 33, 3, x};
  auto v = WarpTile{smem, 33};
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  t.at(threadIdx.x / 32) = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) {
    y[i] = u.at(threadIdx.x / 32) + v.at(0) * (float)(t.pad + u.pad + t.stride + u.last) + Pair<float>{1.f, 2.f}.mix() +
           (u.src == x ? 1.f : 0.f) + (t.src == nullptr ? 2.f : 0.f) + Pair<float>{3.f}.mix();
  }
}

// Value-initialised (Tally t{}, Tally()): its members start from zeros, which the part's
// copy's own constructor must give them too (once left indeterminate).
struct Tally {
  float total;
  int count;
  __device__ void add(float v) { total += v * (1 + (threadIdx.x & 1)); ++count; }
};

__global__ void tally_rows(const float* x, float* out, int cols) {
  Tally a{};
  auto b = Tally();
  for (int col = threadIdx.x; col < cols; col += blockDim.x) {
    a.add(x[blockIdx.x * cols + col]);
    b.add(1.f);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a.total + b.total + (float)a.count;
}

// A kernel that makes an object of its template parameter, bound to a block-reading type:
// the part's body makes the part's copy (once refused).
struct HalfLane {
  float by;
  __device__ explicit HalfLane(float b) : by(b) {}
  __device__ float operator()(float v) const { return v * by + (float)(threadIdx.x & 7); }
};

template <class Op>
__global__ void apply_made(float* x, int n) {
  Op op(0.5f);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = op(x[i]);
}

// CUB's shape, written by hand: a reference to its TempStorage, set by its only constructor
// (once: the copy got a second constructor, taking the view alone, which left the reference
// unset: nvcc refused it).
struct BlockSum {
  struct TempStorage { float warp[8]; };
  TempStorage& storage;
  __device__ explicit BlockSum(TempStorage& s) : storage(s) {}
  __device__ float Sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) storage.warp[threadIdx.x / 32] = v;
    __syncthreads();
    float r = 0.f;
    for (int w = 0; w < 8; ++w) r += storage.warp[w];
    __syncthreads();
    return r;
  }
};

// a factory: its return is its last statement, which every thread runs (once rewritten as an
// early exit ending in 'return {};', which a type without a default constructor refused)
__device__ BlockSum make_sum(BlockSum::TempStorage& storage) { return BlockSum(storage); }

__global__ void block_sums_ref(const float* x, float* out, int n) {
  __shared__ BlockSum::TempStorage tmp;
  const int i = blockIdx.x * 256 + threadIdx.x;
  const float s = BlockSum(tmp).Sum(i < n ? x[i] : 0.f) + make_sum(tmp).Sum(1.f);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
