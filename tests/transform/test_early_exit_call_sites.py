"""The early exit's uniformity across calls (``early_exit/call_sites.py``): a helper that
holds a kernel's whole body, called by thin ``__global__`` wrappers with their own
parameters, returns early on a length it reads through a ``const T* __restrict__``
parameter at a block-uniform index, as vLLM's paged attention does. Such a return is
block-uniform: it stays a plain ``return`` (every thread of the part leaves together)."""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.spec import Dim3, KernelSpec

from toolchain import compile_nvcc

PAGED = """
#include <cstdint>
#include <cfloat>
template <int NUM_WARPS>
__device__ float block_sum(float* red_smem, float sum) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int mask = 16; mask >= 1; mask /= 2) sum += __shfl_xor_sync(uint32_t(-1), sum, mask);
  if (lane == 0) red_smem[warp] = sum;
  __syncthreads();
  if (lane < NUM_WARPS) sum = red_smem[lane];
  for (int mask = NUM_WARPS / 2; mask >= 1; mask /= 2) sum += __shfl_xor_sync(uint32_t(-1), sum, mask);
  return __shfl_sync(uint32_t(-1), sum, 0);
}

template <int HEAD, int THREADS, int PARTITION = 0>
__device__ void attention_body(float* __restrict__ out, const float* __restrict__ q,
                               const int* __restrict__ seq_lens, int max_partitions) {
  const int seq_idx = blockIdx.y;
  const int partition_idx = blockIdx.z;
  const int seq_len = seq_lens[seq_idx];
  if (PARTITION > 0 && partition_idx * PARTITION >= seq_len) {
    // no work: the whole block leaves
    return;
  }
  constexpr int NUM_WARPS = THREADS / 32;
  __shared__ float logits[THREADS];
  __shared__ float red_smem[2 * NUM_WARPS];
  float qk = 0.f;
  for (int i = threadIdx.x; i < HEAD; i += THREADS) qk += q[seq_idx * HEAD + i] * (i < seq_len ? 1.f : 0.f);
  logits[threadIdx.x] = qk;
  __syncthreads();
  const float v = logits[(threadIdx.x + 1) % THREADS];
  const float s = block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], v);
  if (threadIdx.x == 0) out[seq_idx * max_partitions + partition_idx] = s;
}

template <int HEAD, int THREADS>
__global__ void attention_v1(float* __restrict__ out, const float* __restrict__ q, const int* __restrict__ seq_lens) {
  attention_body<HEAD, THREADS>(out, q, seq_lens, /* max_partitions */ 1);
}

template <int HEAD, int THREADS, int PARTITION>
__global__ void attention_v2(float* __restrict__ out, const float* __restrict__ q, const int* __restrict__ seq_lens,
                             int max_partitions) {
  attention_body<HEAD, THREADS, PARTITION>(out, q, seq_lens, max_partitions);
}
"""
OTHER = "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n"
V2 = KernelSpec("k.cu", "attention_v2", Dim3(128), ("128", "128", "256"))


def _fused(source: str, spec: KernelSpec = V2, layout: str | None = None) -> str:
    return fuse([KernelSpec("k.cu", "other", Dim3(96)), spec], sources={"k.cu": source + OTHER}, layout=layout).source


@pytest.mark.nvcc
def test_a_return_on_a_length_read_through_a_restrict_const_parameter_stays_a_return(tmp_path):
    # once refused: the helper's parameters counted as per-thread values, and the load as
    # memory any thread may see differently; the region rewrite then met block_sum's
    # argument read from shared memory
    fused = _fused(PAGED)
    body = fused[fused.index("void attention_body__hf2"):]
    assert "if (PARTITION > 0 && partition_idx * PARTITION >= seq_len) {" in body and "hf_active" not in body
    compile_nvcc(fused, workdir=tmp_path)


@pytest.mark.parametrize("change, why", [
    # a per-thread argument at the call: the parameter is not uniform
    ("attention_body<HEAD, THREADS, PARTITION>(out, q, seq_lens, max_partitions);",
     "attention_body<HEAD, THREADS, PARTITION>(out, q, seq_lens + threadIdx.x % 2, max_partitions);"),
    # no __restrict__: another pointer may write what the threads read
    ("const int* __restrict__ seq_lens, int max_partitions) {", "const int* seq_lens, int max_partitions) {"),
    # not const: the function may write it
    ("const int* __restrict__ seq_lens, int max_partitions) {", "int* __restrict__ seq_lens, int max_partitions) {"),
    # const cast away: the function may write through it
    ("const int seq_len = seq_lens[seq_idx];",
     "const int seq_len = seq_lens[seq_idx]; if (seq_len < 0) ((int*)seq_lens)[seq_idx] = 0;"),
    # copied into another pointer (what writes through that is not followed)
    ("const int seq_len = seq_lens[seq_idx];", "const int seq_len = seq_lens[seq_idx]; const int* lens_copy = seq_lens;"),
    # read at a thread's own index
    ("const int seq_len = seq_lens[seq_idx];", "const int seq_len = seq_lens[seq_idx + threadIdx.x / 64];"),
    # the pointer moved by a value that differs between threads
    ("const int seq_len = seq_lens[seq_idx];", "const int seq_len = *(seq_lens + threadIdx.x % 2);"),
    # a local that hides the caller's parameter
    ("attention_body<HEAD, THREADS, PARTITION>(out, q, seq_lens, max_partitions);",
     "{ const int* seq_lens = q == nullptr ? nullptr : (const int*)q + threadIdx.x % 2; "
     "attention_body<HEAD, THREADS, PARTITION>(out, q, seq_lens, max_partitions); }"),
    # a local of the caller is not followed
    ("attention_body<HEAD, THREADS, PARTITION>(out, q, seq_lens, max_partitions);",
     "const int* lens = seq_lens; attention_body<HEAD, THREADS, PARTITION>(out, q, lens, max_partitions);"),
])
def test_what_may_differ_between_threads_is_not_taken_for_uniform(change, why):
    # such a return is made safe with the activity flag instead (every thread reaches the barriers)
    source = PAGED.replace(change, why)
    assert source != PAGED
    body = _fused(source)
    body = body[body.index("void attention_body__hf2"):]
    assert "hf_active && (PARTITION > 0 && partition_idx * PARTITION >= seq_len)" in body


def test_where_the_flag_cannot_be_used_either_the_return_is_refused():
    # block_sum's argument read from shared memory: the threads that returned cannot evaluate it
    source = PAGED.replace("const int seq_len = seq_lens[seq_idx];", "const int seq_len = seq_lens[seq_idx + threadIdx.x / 64];")
    source = source.replace("block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], v)",
                            "block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], logits[threadIdx.x])")
    with pytest.raises(HFuseError, match="early return at line 23 comes before a barrier"):
        _fused(source, layout="horizontal")
    # where each fused block runs one block of the kernel alone, the return stays as written
    fused = _fused(source)
    assert "interblock fusion" in fused and "hfuse_sync<0, 128>();" in fused and "hf_active" not in fused


def test_a_struct_field_read_through_a_restrict_const_pointer_is_uniform():
    source = """
struct Lens { int n; int stride; };
__global__ void k_field(float* __restrict__ y, const Lens* __restrict__ lens) {
  __shared__ float s[128];
  if (blockIdx.x * 128 >= lens->n) return;
  s[threadIdx.x] = y[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  y[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x] * (*(&lens->stride + 0) > 0 ? 1.f : 0.f);
}
"""
    fused = _fused(source, KernelSpec("k.cu", "k_field", Dim3(128)))
    assert "if (hf_ctx.blockIdx.x * 128 >= lens->n) return;" in fused and "hf_active" not in fused


@pytest.mark.parametrize("load", ["__ldg(&lens[blockIdx.y])", "__ldg(lens + blockIdx.y)"])
def test_a_load_through_the_read_only_cache_at_a_uniform_address_is_uniform(load):
    # __ldg promises the data is not written while the kernel runs, whatever the pointer's type
    source = f"""
__global__ void k_ldg(float* y, const int* lens) {{
  __shared__ float s[128];
  if (blockIdx.x * 128 >= {load}) return;
  s[threadIdx.x] = y[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  y[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
}}
"""
    fused = _fused(source, KernelSpec("k.cu", "k_ldg", Dim3(128)))
    assert "hf_active" not in fused
    # at a thread's own address it is a per-thread value: the flag
    assert "hf_active" in _fused(source.replace("blockIdx.y", "threadIdx.x"), KernelSpec("k.cu", "k_ldg", Dim3(128)))
