// Normalisation kernels: RMSNorm with a shared-memory block reduction, LayerNorm with
// cooperative groups' constexpr tiles, templates on the type and the block size.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_fp16.h>

namespace cg = cooperative_groups;

namespace norms {

constexpr int kWarp = 32;

template <typename T>
__device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <int kThreads>
__device__ float block_sum(float v, float* shared) {
  static_assert(kThreads % kWarp == 0, "whole warps");
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / kWarp ? shared[lane] : 0.f;
  if (warp == 0) {
    for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// one block per row
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads) rms_norm(const T* __restrict__ x, const T* __restrict__ w,
                                                     T* __restrict__ y, int cols, float eps) {
  __shared__ float partial[kThreads / kWarp];
  const T* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0.f;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    const float v = to_float(row[c]);
    ss += v * v;
  }
  const float total = block_sum<kThreads>(ss, partial);
  const float inv = rsqrtf(total / cols + eps);
  for (int c = threadIdx.x; c < cols; c += kThreads)
    y[static_cast<size_t>(blockIdx.x) * cols + c] = from_float<T>(to_float(row[c]) * inv * to_float(w[c]));
}

// one warp-sized tile per row, LayerNorm without affine
template <int kTile>
__global__ void layer_norm_tiles(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  auto block = cg::this_thread_block();
  auto tile = cg::tiled_partition<kTile>(block);
  const int row = blockIdx.x * (blockDim.x / kTile) + tile.meta_group_rank();
  if (row >= rows) return;
  const float* r = x + static_cast<size_t>(row) * cols;
  float s = 0.f;
  for (int c = tile.thread_rank(); c < cols; c += kTile) s += r[c];
  const float mean = cg::reduce(tile, s, cg::plus<float>()) / cols;
  float v = 0.f;
  for (int c = tile.thread_rank(); c < cols; c += kTile) v += (r[c] - mean) * (r[c] - mean);
  const float rstd = rsqrtf(cg::reduce(tile, v, cg::plus<float>()) / cols + 1e-5f);
  for (int c = tile.thread_rank(); c < cols; c += kTile) y[static_cast<size_t>(row) * cols + c] = (r[c] - mean) * rstd;
}

// tile sizes from a traits struct, a file-scope constexpr and a metafunction, as a library
// keeps its configuration: only a C++ compiler evaluates them (hfuse asks Clang)
struct RowConfig {
  static constexpr int kRowTile = 16;
  static constexpr int kRowsPerBlock = 4;
};
template <int N> struct Log2 { static constexpr int value = 1 + Log2<N / 2>::value; };
template <> struct Log2<1> { static constexpr int value = 0; };

template <class Config>
__global__ void __launch_bounds__(Config::kRowTile * Config::kRowsPerBlock)
row_sums_configured(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  auto tile = cg::tiled_partition<Config::kRowTile>(cg::this_thread_block());
  const int row = blockIdx.x * Config::kRowsPerBlock + tile.meta_group_rank();
  if (row >= rows) return;
  float s = 0.f;
  for (int c = tile.thread_rank(); c < cols; c += tile.size()) s += x[static_cast<size_t>(row) * cols + c];
  s = cg::reduce(tile, s, cg::plus<float>());
  if (tile.thread_rank() == 0) y[row] = s + tile.meta_group_size() * 1000.f;
}

__global__ void row_max_pow2(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  constexpr int kShift = Log2<kWarp>::value - 1;  // 4
  constexpr int kTile = 1 << kShift;
  auto tile = cg::tiled_partition<kTile>(cg::this_thread_block());
  const int row = blockIdx.x * (blockDim.x / kTile) + tile.meta_group_rank();
  if (row >= rows) return;
  float m = -INFINITY;
  for (int c = tile.thread_rank(); c < cols; c += kTile) m = fmaxf(m, x[static_cast<size_t>(row) * cols + c]);
  m = cg::reduce(tile, m, cg::greater<float>());
  if (tile.thread_rank() == 0) y[row] = m;
}

// grid-stride loops over cooperative groups' grid (ranks and sizes only, no grid.sync():
// any launch runs them)
template <typename T>
__global__ void scale_grid_stride(const T* __restrict__ x, T* __restrict__ y, float alpha, size_t n) {
  const auto grid = cg::this_grid();
  for (size_t i = grid.thread_rank(); i < n; i += grid.size()) y[i] = from_float<T>(alpha * to_float(x[i]));
}

__global__ void block_partials(const float* __restrict__ x, float* __restrict__ partials, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  auto warp = cg::tiled_partition<kWarp>(block);
  __shared__ float warp_sums[32];
  float v = 0.f;
  for (unsigned long long i = grid.thread_rank(); i < n; i += grid.num_threads()) v += x[i];
  v = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = v;
  block.sync();
  if (block.thread_rank() == 0) {
    float s = 0.f;
    for (unsigned w = 0; w < warp.meta_group_size(); ++w) s += warp_sums[w];
    const dim3 where = grid.block_index();
    partials[grid.block_rank()] = s + (where.y * grid.dim_blocks().x + where.x == grid.block_rank() ? 0.f : 1e9f);
  }
}

// a block reduction utility in DeepSpeed's manner: the kernel cuts the warp, the utility asks
// each warp's place through the tile it is handed
namespace reduce_util {
constexpr int kMaxWarps = 32;

__device__ __forceinline__ unsigned warp_slot(const cg::thread_block_tile<kWarp>& warp) {
  return warp.meta_group_rank();
}

template <int kWarpBound = kMaxWarps>
__device__ __forceinline__ void block_sum(cg::thread_block& tb, cg::thread_block_tile<kWarp>& warp, float& val) {
  __shared__ float buffer[kMaxWarps];
  float v = cg::reduce(warp, val, cg::plus<float>());
  if (warp.thread_rank() == 0) buffer[warp_slot(warp)] = v;
  tb.sync();
  if (warp.meta_group_rank() == 0) {
    v = warp.thread_rank() < warp.meta_group_size() ? buffer[warp.thread_rank()] : 0.f;
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) buffer[0] = v;
  }
  tb.sync();
  val = buffer[0];
  tb.sync();
}
}  // namespace reduce_util

// one block per row of a 2-D block (rows of the block stride the row's columns)
__global__ void row_sum_squares(const float* __restrict__ x, float* __restrict__ y, int cols) {
  cg::thread_block tb = cg::this_thread_block();
  cg::thread_block_tile<kWarp> warp = cg::tiled_partition<kWarp>(tb);
  float acc = 0.f;
  for (int c = tb.thread_rank(); c < cols; c += tb.size()) {
    const float v = x[static_cast<size_t>(blockIdx.x) * cols + c];
    acc += v * v;
  }
  reduce_util::block_sum(tb, warp, acc);
  if (tb.thread_rank() == 0) y[blockIdx.x] = acc;
}

// the block's split barrier (CUDA 12.2): arrive, do something else, then wait
__global__ void reverse_split_barrier(const float* __restrict__ in, float* __restrict__ out, int n) {
  auto block = cg::this_thread_block();
  __shared__ float tile[256];
  const int i = blockIdx.x * block.size() + block.thread_rank();
  tile[block.thread_rank()] = i < n ? in[i] : 0.f;
  auto token = block.barrier_arrive();
  const float own = i < n ? in[i] : 0.f;
  block.barrier_wait(std::move(token));
  if (i < n) out[i] = own + tile[block.size() - 1 - block.thread_rank()];
}

// where each thread sits: its warp among the block's warps, its half-warp within the warp
__global__ void tile_places(int* __restrict__ out) {
  auto block = cg::this_thread_block();
  auto warp = cg::tiled_partition<kWarp>(block);
  auto half = cg::tiled_partition<kWarp / 2>(warp);
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      warp.meta_group_rank() + 100 * half.meta_group_rank() + 1000 * half.meta_group_size() + 10000 * warp.meta_group_size();
}

}  // namespace norms
