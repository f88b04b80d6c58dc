"""Early returns before barriers that hfuse now makes safe, through ``fuse`` on the CPU:
a return before a barrier inside a loop, a return inside a loop, a return before a
helper that synchronises (and writes memory), ``__syncthreads_or/count`` after a return,
in horizontal and vertical fusion. Every fused file is compiled with ``nvcc -arch=sm_90
-cubin``; the shapes that stay refused are in test_fuse_errors.py, the GPU runs in
test_fuse_new_shapes_gpu.py."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hfuse.api import FusedKernel, fuse
from hfuse.spec import KernelSpec

from corpus import cases as C  # tests/corpus/cases.py (tests/ is on sys.path via its conftest)

SHAPES = C.CORPUS / "early_exit" / "shapes.cu"
VOTE = "if (__any_sync(0xffffffffu, hf_active) && !hf_active) return;"
PARTNER = KernelSpec(C.CORPUS / "vec_scale.cu", "vec_scale", 128)


def _nvcc(fused: FusedKernel, tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    path = fused.write(tmp_path / f"{fused.name}_{fused.layout.name}.cu")
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-o", str(path.with_suffix(".cubin")), str(path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"nvcc failed on {path}:\n{result.stderr}"


def _part(source: str, index: int) -> str:
    start = source.index(f"// ---- part {index}:")
    end = source.index("// ---- ", start + 10)
    return " ".join(re.sub(r"//[^\n]*|/\*.*?\*/", "", source[start:end], flags=re.S).split())


def _before_first_barrier(code: str) -> str:
    return code.split("hfuse_sync<")[0]


@pytest.mark.nvcc
@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_return_before_a_barrier_in_a_loop(layout, tmp_path):
    fused = fuse([PARTNER, KernelSpec(C.ERRORS / "barrier_in_loop.cu", "return_then_loop", 256)], layout=layout)
    code = _part(fused.source, 2)
    # the loop and both of its barriers run in every thread; its work only while the flag holds
    loop = re.search(r"for \(int k = 1; k < 8; k \*= 2\) \{(.*?)\} if \(hf_active\) \{ out\[i\] = v; \}", code)
    assert loop, code
    body = loop.group(1)
    assert body.count("hfuse_sync<1, 256>();") == 2 and body.count("if (hf_active) {") == 2
    assert "int v; if (hf_active) { v = in[i]; }" in code
    returns = re.findall(r"\breturn\b[^;]*;", _before_first_barrier(code))
    assert returns == (["return;"] if layout == "horizontal" else [])
    assert (VOTE in code) == (layout == "horizontal")
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_return_inside_a_loop_in_the_kernel_and_in_a_helper(layout, tmp_path):
    fused = fuse([KernelSpec(C.ERRORS / "return_in_loop.cu", "loop_return", 256),
                  KernelSpec(C.ERRORS / "return_in_helper.cu", "helper_return", 256)], layout=layout)
    kernel = _part(fused.source, 1)
    assert "for (int k = 0; k < 4; ++k) { if (hf_active && (i + k >= n)) hf_active = false;" in kernel
    helper = _part(fused.source, 2)
    assert "for (int j = 0; j < 4; ++j) { if (hf_active && (i + j >= n)) hf_active = false; }" in helper
    assert not re.search(r"\breturn\b", _before_first_barrier(helper))  # a helper's return never exits the thread
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_helper_that_synchronises_and_writes_memory_takes_the_flag(tmp_path):
    fused = fuse([KernelSpec(SHAPES, "ee_helper", 128), KernelSpec(SHAPES, "ee_vote", 256)])
    code = _part(fused.source, 1)
    # the part's copy of the helper: the flag as a last parameter, its writes guarded, its barriers not
    assert re.search(r"int ee_exchange__hf1\(const hfuse_ctx& hf_ctx, int\* buf, int v, bool hf_caller_active = true\)", code)
    assert "bool hf_active = hf_caller_active; if (hf_active) { buf[hf_ctx.threadIdx.x] = v; } hfuse_sync<1, 128>();" in code
    # every thread calls it, passing its flag; the threads that left pass false
    assert "const int r = ee_exchange__hf1(hf_ctx, eh_buf, v * 3, hf_active);" in code
    assert "const int s = ee_exchange__hf1(hf_ctx, eh_buf, r + 1, hf_active);" in code
    vote = _part(fused.source, 2)
    assert "while (hfuse_sync_or<2, 256>(hf_active && (left > 0))) { left--; rounds++; }" in vote
    assert "hfuse_sync_count<2, 256>(hf_active && (in[i] > 0))" in vote
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_warp_shuffle_after_the_return(tmp_path):
    """Horizontal: the threads that left exit (their warp-mates' full-mask shuffle does not wait
    for them). Vertical keeps them alive, so it is refused (test_fuse_errors.py)."""
    fused = fuse([KernelSpec(SHAPES, "ee_warp_first", 128), KernelSpec(SHAPES, "ee_tree_sum", 120)])
    first = _part(fused.source, 1)
    assert first.index(VOTE) < first.index("__shfl_sync") < first.index("hfuse_sync<")
    tree = _part(fused.source, 2)
    assert "for (unsigned stride = 1; stride < hf_ctx.blockDim.x; stride *= 2) { if (hf_active) {" in tree
    assert fused.parts[1].size == 128 and fused.parts[1].threads == 120
    _nvcc(fused, tmp_path)


def test_helper_called_only_before_any_return_keeps_its_signature():
    fused = fuse([KernelSpec(C.CORPUS / "block_reduce.cu", "block_reduce", 128), PARTNER])
    assert "hf_caller_active" not in fused.source


USING_CG = """
#include <cooperative_groups.h>
using namespace cooperative_groups;
__device__ void sync(float* flag) { *flag = 1.f; }  // the program's own, not a barrier
__global__ void rotate(const float* in, float* out, int n) {
  __shared__ float tile[128];
  thread_block block = this_thread_block();
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  tile[threadIdx.x] = in[i];
  sync(block);
  out[i] = tile[(threadIdx.x + 1) % 128];
  sync(out);
}
"""


def test_a_barrier_called_by_its_name_alone_after_using_namespace_is_one(tmp_path):
    # once: 'sync(block)' after 'using namespace cooperative_groups' was no barrier to the
    # early-exit rewrite, so the return stayed and the part's named barrier waited forever for
    # the warps that had left; the program's own 'sync(out)' is still no barrier
    fused = fuse([PARTNER, KernelSpec("k.cu", "rotate", 128)], sources={"k.cu": USING_CG})
    part = _part(fused.source, 2)
    assert "if (hf_active && (i >= n)) hf_active = false;" in part and VOTE in part
    assert "if (hf_active) { tile[hf_ctx.threadIdx.x] = in[i]; } sync(block);" in part
    assert "if (hf_active) { out[i] = tile[(hf_ctx.threadIdx.x + 1) % 128]; sync(out); }" in part
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_a_parameter_block_whose_other_member_is_written_stays_horizontal(tmp_path):
    # once (FasterTransformer's masked attention): writing 'p.trace[i]' made every member of 'p'
    # differ between threads, a member passed to an overloaded helper counted as passed by
    # reference, and a constexpr local used after the barrier "could not be hoisted": the kernel
    # went to the interblock layout
    fused = fuse([PARTNER, KernelSpec(SHAPES, "ee_params", 128)])
    assert fused.layout.name == "horizontal"
    code = _part(fused.source, 2)
    assert "constexpr int kLanes = sizeof(int4) / sizeof(int); static_assert(kLanes == 4," in code
    assert re.search(r"if \(p\.rounds > 0\) \{ if \(hf_active\) \{ p\.trace\[i\] = v; ee_bump\(v, p\.rounds, 3\);", code)
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_a_tile_renderers_masked_return_and_table_driven_rounds_stay_horizontal(tmp_path):
    # gsplat's rasterizer shape: 'if (masked) { write the background; return; }', the tile from
    # 'block.group_index()', and a read-only table moved to it bounding the loop around barriers
    fused = fuse([PARTNER, KernelSpec(SHAPES, "ee_tiles", 128)])
    assert fused.layout.name == "horizontal"
    code = _part(fused.source, 2)
    assert re.search(r"if \(hf_active && \(i < n && in\[i\] % 7 == 0\)\) \{ #pragma unroll 1 "
                     r"for \(int k = 0; k < 2; \+\+k\) out\[i\] = -1 - k; hf_active = false; \}", code), code
    assert "for (int r = 0; r < rounds; ++r) { if (hf_active) { et_buf[t] = v; }" in code
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_a_gemv_accumulator_zeroed_after_the_barrier_stays_horizontal(tmp_path):
    # exllamav2's quantised GEMM: 'float block_c[m_count][4] = {};' after the barrier, a comment
    # closing the guarded chunk before it, "could not be hoisted" and sent the kernel to the
    # interblock layout; a constant needs no thread to compute it, so it is declared above the guard
    fused = fuse([PARTNER, KernelSpec(SHAPES, "ee_accumulate", 128, ("2",))])
    assert fused.layout.name == "horizontal"
    code = _part(fused.source, 2)
    assert "hfuse_sync<1, 128>(); int acc[kRows][2] = {}; if (hf_active) { #pragma unroll for (int r = 0;" in code, code
    assert "// column result" in fused.source  # (the comments stay too)
    _nvcc(fused, tmp_path)

