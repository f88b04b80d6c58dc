// CuTe, as FlashAttention-2 and CUTLASS 3 kernels write it (our own kernels; CUTLASS's headers
// from the installed nvidia-cutlass package, given with -I as such projects give them):
// tensors built in the kernel from plain pointers, tiles per block, thread partitions from
// threadIdx.x, swizzled shared memory behind extern __shared__, SM80 tensor-core MMA atoms and
// cp.async tiled copies, and `using namespace cute;` at file scope.
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cutlass/numeric_types.h>

using namespace cute;

// out = alpha * in over an m x n row-major matrix, one 32 x 64 tile per block, 8 x 32 threads
template <int kTileM, int kTileN>
__global__ void tiled_scale(const float* in, float* out, int m, int n, float alpha) {
  Tensor mIn = make_tensor(make_gmem_ptr(in), make_shape(m, n), make_stride(n, Int<1>{}));
  Tensor mOut = make_tensor(make_gmem_ptr(out), make_shape(m, n), make_stride(n, Int<1>{}));
  auto tile = make_shape(Int<kTileM>{}, Int<kTileN>{});
  Tensor gIn = local_tile(mIn, tile, make_coord(blockIdx.x, blockIdx.y));
  Tensor gOut = local_tile(mOut, tile, make_coord(blockIdx.x, blockIdx.y));
  auto threads = Layout<Shape<_8, _32>, Stride<_32, _1>>{};
  Tensor tIn = local_partition(gIn, threads, threadIdx.x);
  Tensor tOut = local_partition(gOut, threads, threadIdx.x);
  Tensor fragment = make_tensor_like(tIn);
  copy(tIn, fragment);
  CUTE_UNROLL
  for (int i = 0; i < size(fragment); ++i) {
    fragment(i) = alpha * fragment(i);
  }
  copy(fragment, tOut);
}

// C = A * B^T (A: m x k, B: n x k, both k-major; C: m x n row-major) on CUDA cores, as CuTe's
// first GEMM tutorial partitions it: one thread layout that divides the copied tiles, another
// that divides the tile of C
template <int kBlockM, int kBlockN, int kBlockK>
struct SimtTraits {
  using SmemLayoutA = decltype(make_layout(make_shape(Int<kBlockM>{}, Int<kBlockK>{})));
  using SmemLayoutB = decltype(make_layout(make_shape(Int<kBlockN>{}, Int<kBlockK>{})));
  using CopyThreads = Layout<Shape<_32, _8>>;
  using MathThreads = Layout<Shape<_16, _16>>;
  static constexpr int kSmemBytes = (kBlockM + kBlockN) * kBlockK * int(sizeof(float));
};

template <typename Traits>
__global__ void __launch_bounds__(256) simt_gemm(const float* a, const float* b, float* c, int m, int n, int k) {
  constexpr int kBlockM = size<0>(typename Traits::SmemLayoutA{});
  constexpr int kBlockN = size<0>(typename Traits::SmemLayoutB{});
  constexpr int kBlockK = size<1>(typename Traits::SmemLayoutA{});
  extern __shared__ char smem_[];
  Tensor mA = make_tensor(make_gmem_ptr(a), make_shape(m, k), make_stride(k, Int<1>{}));
  Tensor mB = make_tensor(make_gmem_ptr(b), make_shape(n, k), make_stride(k, Int<1>{}));
  Tensor mC = make_tensor(make_gmem_ptr(c), make_shape(m, n), make_stride(n, Int<1>{}));
  auto tiler = make_shape(Int<kBlockM>{}, Int<kBlockN>{}, Int<kBlockK>{});
  auto coord = make_coord(blockIdx.x, blockIdx.y, _);
  Tensor gA = local_tile(mA, tiler, coord, Step<_1, X, _1>{});
  Tensor gB = local_tile(mB, tiler, coord, Step<X, _1, _1>{});
  Tensor gC = local_tile(mC, tiler, coord, Step<_1, _1, X>{});
  Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<float*>(smem_)), typename Traits::SmemLayoutA{});
  Tensor sB = make_tensor(sA.data() + size(sA), typename Traits::SmemLayoutB{});
  using CopyThreads = typename Traits::CopyThreads;
  using MathThreads = typename Traits::MathThreads;
  static_assert(kBlockM % size<0>(CopyThreads{}) == 0 && kBlockK % size<1>(CopyThreads{}) == 0);
  static_assert(kBlockM % size<0>(MathThreads{}) == 0 && kBlockN % size<1>(MathThreads{}) == 0);
  Tensor tAgA = local_partition(gA, CopyThreads{}, threadIdx.x);
  Tensor tAsA = local_partition(sA, CopyThreads{}, threadIdx.x);
  Tensor tBgB = local_partition(gB, CopyThreads{}, threadIdx.x);
  Tensor tBsB = local_partition(sB, CopyThreads{}, threadIdx.x);
  Tensor tCsA = local_partition(sA, MathThreads{}, threadIdx.x, Step<_1, X>{});
  Tensor tCsB = local_partition(sB, MathThreads{}, threadIdx.x, Step<X, _1>{});
  Tensor tCgC = local_partition(gC, MathThreads{}, threadIdx.x, Step<_1, _1>{});
  Tensor tCrC = make_tensor_like(tCgC);
  clear(tCrC);
  for (int k_tile = 0; k_tile < size<2>(tAgA); ++k_tile) {
    copy(tAgA(_, _, k_tile), tAsA);
    copy(tBgB(_, _, k_tile), tBsB);
    __syncthreads();
    gemm(tCsA, tCsB, tCrC);
    __syncthreads();
  }
  copy(tCrC, tCgC);
}

// C = A * B^T in half precision with float accumulation on tensor cores (SM80 MMA atoms,
// cp.async copies into swizzled shared memory), FlashAttention-2's building blocks
template <int kBlockM_, int kBlockN_, int kBlockK_, int kWarps_>
struct TensorCoreTraits {
  static constexpr int kBlockM = kBlockM_, kBlockN = kBlockN_, kBlockK = kBlockK_, kWarps = kWarps_;
  static constexpr int kThreads = kWarps * 32;
  using Element = cutlass::half_t;
  using TiledMma = TiledMMA<MMA_Atom<SM80_16x8x16_F32F16F16F32_TN>, Layout<Shape<Int<kWarps>, _1, _1>>,
                            Tile<Int<16 * kWarps>, _16, _16>>;
  using SmemAtom = decltype(composition(Swizzle<2, 3, 3>{},
                                        Layout<Shape<_8, Int<kBlockK>>, Stride<Int<kBlockK>, _1>>{}));
  using SmemLayoutA = decltype(tile_to_shape(SmemAtom{}, Shape<Int<kBlockM>, Int<kBlockK>>{}));
  using SmemLayoutB = decltype(tile_to_shape(SmemAtom{}, Shape<Int<kBlockN>, Int<kBlockK>>{}));
  using GmemCopy = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>, Element>{},
                                            Layout<Shape<Int<kThreads / 4>, _4>, Stride<_4, _1>>{},
                                            Layout<Shape<_1, _8>>{}));
  static constexpr int kSmemBytes = (kBlockM + kBlockN) * kBlockK * int(sizeof(Element));
};

template <typename Traits>
__global__ void __launch_bounds__(Traits::kThreads)
    tensor_core_gemm(const cutlass::half_t* a, const cutlass::half_t* b, float* c, int m, int n, int k) {
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, kBlockK = Traits::kBlockK;
  extern __shared__ char smem_[];
  const int tidx = threadIdx.x;
  Tensor mA = make_tensor(make_gmem_ptr(a), make_shape(m, k), make_stride(k, _1{}));
  Tensor mB = make_tensor(make_gmem_ptr(b), make_shape(n, k), make_stride(k, _1{}));
  Tensor mC = make_tensor(make_gmem_ptr(c), make_shape(m, n), make_stride(n, _1{}));
  Tensor gA = local_tile(mA, Shape<Int<kBlockM>, Int<kBlockK>>{}, make_coord(blockIdx.x, _));
  Tensor gB = local_tile(mB, Shape<Int<kBlockN>, Int<kBlockK>>{}, make_coord(blockIdx.y, _));
  Tensor gC = local_tile(mC, Shape<Int<kBlockM>, Int<kBlockN>>{}, make_coord(blockIdx.x, blockIdx.y));
  Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<Element*>(smem_)), typename Traits::SmemLayoutA{});
  Tensor sB = make_tensor(sA.data() + size(sA), typename Traits::SmemLayoutB{});
  typename Traits::GmemCopy gmem_copy;
  auto thr_copy = gmem_copy.get_thread_slice(tidx);
  Tensor tAgA = thr_copy.partition_S(gA);
  Tensor tAsA = thr_copy.partition_D(sA);
  Tensor tBgB = thr_copy.partition_S(gB);
  Tensor tBsB = thr_copy.partition_D(sB);
  typename Traits::TiledMma tiled_mma;
  auto thr_mma = tiled_mma.get_thread_slice(tidx);
  Tensor tCsA = thr_mma.partition_A(sA);
  Tensor tCsB = thr_mma.partition_B(sB);
  Tensor tCgC = thr_mma.partition_C(gC);
  Tensor tCrA = thr_mma.make_fragment_A(tCsA);
  Tensor tCrB = thr_mma.make_fragment_B(tCsB);
  Tensor acc = partition_fragment_C(tiled_mma, Shape<Int<kBlockM>, Int<kBlockN>>{});
  clear(acc);
  for (int k_tile = 0; k_tile < size<3>(tAgA); ++k_tile) {
    copy(gmem_copy, tAgA(_, _, _, k_tile), tAsA);
    copy(gmem_copy, tBgB(_, _, _, k_tile), tBsB);
    cp_async_fence();
    cp_async_wait<0>();
    __syncthreads();
    copy(tCsA, tCrA);
    copy(tCsB, tCrB);
    gemm(tiled_mma, acc, tCrA, tCrB, acc);
    __syncthreads();
  }
  copy(acc, tCgC);
}
