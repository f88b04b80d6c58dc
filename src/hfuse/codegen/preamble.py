"""Definitions every fused file carries: the part context and the named barriers."""
from __future__ import annotations

from typing import Literal

BarrierForm = Literal["barrier", "bar"]

_CONTEXT = """\
// What a fused part sees in place of the CUDA built-ins (one per part, in registers).
struct hfuse_ctx {
  uint3 threadIdx;
  uint3 blockDim;
  uint3 blockIdx;
  uint3 gridDim;
  unsigned char* dyn_smem;  // this part's slice of the dynamic shared memory
};
"""

# ``barrier.*`` is PTX's non-aligned form: the parts reach their barriers from different
# branches, which the aligned ``bar.*`` form does not allow (it happens to work today).
_BARRIERS = """\
// Named barrier ID over the N threads of one part (replaces __syncthreads()). ID 0: a part
// that runs alone in its block uses the block's own barrier, which threads that exit release.
template <unsigned ID, unsigned N>
__device__ __forceinline__ void hfuse_sync() {
  if constexpr (ID == 0) __syncthreads();
  else asm volatile("{OP}.sync %0, %1;" :: "n"(ID), "n"(N) : "memory");
}
template <unsigned ID, unsigned N>
__device__ __forceinline__ int hfuse_sync_count(int predicate) {
  if constexpr (ID == 0) {
    return __syncthreads_count(predicate);
  } else {
    int count;
    asm volatile("{ .reg .pred p; setp.ne.s32 p, %1, 0; {OP}.red.popc.u32 %0, %2, %3, p; }"
                 : "=r"(count) : "r"(predicate), "n"(ID), "n"(N) : "memory");
    return count;
  }
}
template <unsigned ID, unsigned N>
__device__ __forceinline__ int hfuse_sync_and(int predicate) {
  if constexpr (ID == 0) {
    return __syncthreads_and(predicate);
  } else {
    int all;
    asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; {OP}.red.and.pred q, %2, %3, p; selp.s32 %0, 1, 0, q; }"
                 : "=r"(all) : "r"(predicate), "n"(ID), "n"(N) : "memory");
    return all;
  }
}
template <unsigned ID, unsigned N>
__device__ __forceinline__ int hfuse_sync_or(int predicate) {
  if constexpr (ID == 0) {
    return __syncthreads_or(predicate);
  } else {
    int any;
    asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; {OP}.red.or.pred q, %2, %3, p; selp.s32 %0, 1, 0, q; }"
                 : "=r"(any) : "r"(predicate), "n"(ID), "n"(N) : "memory");
    return any;
  }
}
"""

_THREAD_BLOCK = """\
// A part's cooperative-groups thread block: its own threads, its own barrier.
template <unsigned ID, unsigned N>
struct hfuse_thread_block {
  const hfuse_ctx& ctx;
  __device__ explicit hfuse_thread_block(const hfuse_ctx& c) : ctx(c) {}
  __device__ void sync() const { hfuse_sync<ID, N>(); }
  __device__ unsigned thread_rank() const {
    return (ctx.threadIdx.z * ctx.blockDim.y + ctx.threadIdx.y) * ctx.blockDim.x + ctx.threadIdx.x;
  }
  // the kernel's own block (N, the barrier's count, is rounded up to warps for a padded part)
  __device__ unsigned size() const { return ctx.blockDim.x * ctx.blockDim.y * ctx.blockDim.z; }
  __device__ unsigned num_threads() const { return size(); }
  __device__ dim3 thread_index() const { return dim3(ctx.threadIdx.x, ctx.threadIdx.y, ctx.threadIdx.z); }
  __device__ dim3 group_index() const { return dim3(ctx.blockIdx.x, ctx.blockIdx.y, ctx.blockIdx.z); }
  __device__ dim3 dim_threads() const { return dim3(ctx.blockDim.x, ctx.blockDim.y, ctx.blockDim.z); }
  __device__ dim3 group_dim() const { return dim_threads(); }
  // the split barrier: arriving is nothing, waiting is the part's barrier (as the block's is)
  using arrival_token = cooperative_groups::thread_block::arrival_token;
  __device__ arrival_token barrier_arrive() const { return arrival_token(); }
  __device__ void barrier_wait(arrival_token&&) const { hfuse_sync<ID, N>(); }
};
template <class Group>
__device__ __forceinline__ void hfuse_group_sync(const Group& group) { group.sync(); }
#ifdef _COOPERATIVE_GROUPS_MEMCPY_ASYNC
// cooperative groups' async copies take a part's block as they take the block: they spread the
// copy by the group's thread_rank() and size() and wait with its sync()
_CG_BEGIN_NAMESPACE
namespace details {
template <unsigned ID, unsigned N>
struct _async_copy_group_supported<hfuse_thread_block<ID, N>> : public _CG_STL_NAMESPACE::true_type {};
}
_CG_END_NAMESPACE
#endif
"""

_GRID_GROUP = """\
// A part's cooperative-groups grid: its own grid of its own blocks. It tells ranks and sizes
// only (grid.sync() needs a cooperative launch of the kernel's own grid: hfuse refuses it).
struct hfuse_grid_group {
  const hfuse_ctx& ctx;
  __device__ explicit hfuse_grid_group(const hfuse_ctx& c) : ctx(c) {}
  __device__ unsigned long long num_blocks() const {
    return (unsigned long long)ctx.gridDim.x * (ctx.gridDim.y * ctx.gridDim.z);
  }
  __device__ unsigned long long block_rank() const {
    return ((unsigned long long)ctx.blockIdx.z * ctx.gridDim.y + ctx.blockIdx.y) * ctx.gridDim.x + ctx.blockIdx.x;
  }
  __device__ unsigned long long block_threads() const {
    return (unsigned long long)ctx.blockDim.x * ctx.blockDim.y * ctx.blockDim.z;
  }
  __device__ unsigned long long num_threads() const { return num_blocks() * block_threads(); }
  __device__ unsigned long long size() const { return num_threads(); }
  __device__ unsigned long long thread_rank() const {
    return block_rank() * block_threads()
           + (ctx.threadIdx.z * ctx.blockDim.y + ctx.threadIdx.y) * ctx.blockDim.x + ctx.threadIdx.x;
  }
  __device__ dim3 dim_blocks() const { return dim3(ctx.gridDim.x, ctx.gridDim.y, ctx.gridDim.z); }
  __device__ dim3 group_dim() const { return dim_blocks(); }
  __device__ dim3 block_index() const { return dim3(ctx.blockIdx.x, ctx.blockIdx.y, ctx.blockIdx.z); }
  __device__ dim3 dim_threads() const {
    return dim3(ctx.gridDim.x * ctx.blockDim.x, ctx.gridDim.y * ctx.blockDim.y, ctx.gridDim.z * ctx.blockDim.z);
  }
  __device__ dim3 thread_index() const {
    return dim3(ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x, ctx.blockIdx.y * ctx.blockDim.y + ctx.threadIdx.y,
                ctx.blockIdx.z * ctx.blockDim.z + ctx.threadIdx.z);
  }
};
"""


def preamble(barrier_form: BarrierForm = "barrier", thread_block: bool = False, grid_group: bool = False) -> str:
    text = _CONTEXT + "\n" + _BARRIERS.replace("{OP}", barrier_form)
    if thread_block:
        text += "\n" + _THREAD_BLOCK
    if grid_group:
        text += "\n" + _GRID_GROUP
    return text
