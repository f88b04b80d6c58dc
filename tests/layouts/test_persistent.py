"""The persistent co-resident layout on the CPU: what its kernel does (tickets once, a
claim loop, the whole block between two blocks of work, the reset by the last block), how
its grid is sized, what it refuses, and that nvcc and NVRTC compile it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import hfuse
from hfuse.codegen.launcher import pack_launch
from hfuse.errors import HFuseError
from hfuse.layouts import PERSISTENT, Persistent, layout_of
from hfuse.layouts.dynamic import SM_SLOTS, counters_name
from hfuse.spec import Dim3, KernelSpec

# a memory-streaming kernel that returns early, and an arithmetic one that synchronises
STREAM = r"""
__global__ void stream(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = 2.0f * x[i];
}
"""
ARITH = r"""
__global__ void arith(float* z, int n, int iters) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = z[i];
  for (int k = 0; k < iters; ++k) v = v * 1.0001f + 0.5f;
  tile[threadIdx.x] = v;
  __syncthreads();
  z[i] = tile[blockDim.x - 1 - threadIdx.x];
}
"""
SOURCES = {"stream.cu": STREAM, "arith.cu": ARITH}


def fused(layout="persistent:2:1", blocks=(128, 256)):
    specs = [KernelSpec(Path("stream.cu"), "stream", blocks[0]), KernelSpec(Path("arith.cu"), "arith", blocks[1])]
    return hfuse.fuse(specs, sources=SOURCES, layout=layout)


def test_a_persistent_layout_is_a_value_written_as_its_spec():
    assert layout_of("persistent:2:1") == Persistent((2, 1)) != PERSISTENT and layout_of("persistent") == PERSISTENT
    assert Persistent((2, 1)).spec == "persistent:2:1" and Persistent((2, 1)).blocks_per_sm(2) == 3
    assert PERSISTENT.blocks_per_sm(3) == 3 and PERSISTENT.grid_limit(2, 132) == 264
    assert PERSISTENT.grid_limit(2, None) is None
    with pytest.raises(HFuseError, match="whole numbers"):
        layout_of("persistent:two")
    with pytest.raises(HFuseError, match="from 1 to 64"):
        layout_of("persistent:0:1")


def test_its_kernel_takes_a_ticket_once_then_loops_over_blocks_of_work():
    f = fused()
    source, counters = f.source, counters_name(f.name)
    assert f.name == "stream_arith__pfused" and "persistent:2:1 fusion" in source
    assert f"__device__ unsigned int {counters}[{SM_SLOTS + 3}];" in source
    kernel = source.split(f"__device__ unsigned int {counters}")[1].split("#ifndef __CUDACC_RTC__")[0]
    ticket, loop = kernel.index("%%smid"), kernel.index("for (;;)")
    assert ticket < loop and "const unsigned hf_mix[2] = {2u, 1u};" in kernel and "% 3u;" in kernel
    body = kernel[loop:kernel.index("__threadfence()")]
    # each turn: thread 0 claims, the block learns the claim, runs it on the part's threads, waits
    assert body.count("atomicAdd(") == 1 and body.count("__syncthreads()") == 2
    assert body.index("hf_claim[0] = hf_part;") < body.index("__syncthreads()") < body.index("if (hf_part == 2u) break;")
    assert "if (threadIdx.x < 128u)" in body and "if (threadIdx.x < 256u)" in body
    # the last block to finish resets the counters, after its claims
    tail = kernel[kernel.index("__threadfence()"):]
    assert "gridDim.x * gridDim.y * gridDim.z - 1u" in tail and f"{counters}[hf_i] = 0u" in tail


def test_a_parts_return_ends_its_block_of_work_not_the_thread():
    source = fused().source
    arith = source[source.index("arith__hf2("):source.index("// ---- fused kernel")]
    # the early return became a flag: the thread still reaches the part's barrier and the loop's
    assert "return" not in arith.split("{", 1)[1] and "hf_active" in arith and "hfuse_sync<" in arith


def test_its_grid_is_sms_times_blocks_per_sm_at_most():
    f = fused("persistent:2:2")
    assert f.pack([[1, 2, 3], [4, 5, 6]], [Dim3(1000), Dim3(500)], [0, 0], sm_count=132).grid == Dim3(528)
    assert f.pack([[1, 2, 3], [4, 5, 6]], [Dim3(10), Dim3(5)], [0, 0], sm_count=132).grid == Dim3(15)
    assert f.pack([[1, 2, 3], [4, 5, 6]], [Dim3(1000), Dim3(500)], [0, 0]).grid == Dim3(1500)  # SMs unknown: every block
    assert pack_launch(256, [[], []], [Dim3(7), Dim3(7)], [0, 0], True, grid_limit=4).grid == Dim3(4)
    # the C++ helper asks the device for its SMs
    assert "cudaDevAttrMultiProcessorCount" in f.source and "hf_sms * 4ull" in f.source
    assert "cudaDevAttrMultiProcessorCount" not in fused("dynamic").source


def test_it_refuses_blocks_that_are_not_warp_multiples():
    with pytest.raises(HFuseError, match="warp multiples \\(arith: 200\\)"):
        fused(blocks=(128, 200))
    with pytest.raises(HFuseError, match="persistent:1:2:3 has 3 blocks per SM for 2 fused kernels"):
        fused("persistent:1:2:3")


def test_the_tuner_gets_the_mixes_that_fit_an_sm():
    specs = [KernelSpec(Path("stream.cu"), "stream", 1024), KernelSpec(Path("arith.cu"), "arith", 256)]
    assert [p.layout.spec for p in PERSISTENT.propose(specs)] == ["persistent:1:1"]  # 2 x 1024 threads
    small = [KernelSpec(Path("stream.cu"), "stream", 128), KernelSpec(Path("arith.cu"), "arith", 256)]
    assert [p.layout.spec for p in PERSISTENT.propose(small)] == [
        "persistent:1:1", "persistent:2:2", "persistent:2:1", "persistent:1:2"]


@pytest.mark.nvcc
def test_nvcc_compiles_the_kernel_and_its_launch_helper(tmp_path):
    path = tmp_path / "fused.cu"
    fused("persistent:2:2").write(path)
    # a host call of the helper: it must compile as C++ too
    main = tmp_path / "main.cu"
    main.write_text(f'#include "{path}"\nint main() {{ float* p = nullptr; return (int)stream_arith__pfused_launch('
                    "dim3(4), p, p, 1, 0, dim3(4), p, 1, 1, 0); }\n")
    done = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(main), "-o", str(tmp_path / "main.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.nvrtc
def test_nvrtc_compiles_it():
    from hfuse.runtime.compile import Compiler

    f = fused("persistent:1:2")
    binary = Compiler("sm_90").compile(f.source, [f.name])
    assert not binary.missing_reports([f.name])


def test_its_variants_are_the_mixes_one_step_away_that_fit_an_sm():
    assert [l.spec for l in layout_of("persistent:2:2").variants(2, 256)] == [
        "persistent:3:2", "persistent:1:2", "persistent:2:3", "persistent:2:1"]
    assert [l.spec for l in layout_of("persistent:1:1").variants(2, 1024)] == []  # 3 x 1024 threads: too many
    # dispatch ratios in lowest terms, equal weights written as the default
    assert [l.spec for l in layout_of("dynamic:2:1").variants(2, 256)] == ["dynamic:3:1", "dynamic"]
