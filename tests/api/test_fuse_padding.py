"""Blocks that are not warp multiples (120 threads, 10x12, 5x5x5), on the CPU.

A part occupies its block size rounded up to warps (120 -> 128): offsets and the fused
block use the padded sizes, the named barrier counts the padded size, the part still
sees its own ``blockDim`` and thread indices, and its padding threads skip the body (and
exit). Each fused file is compiled with ``nvcc -arch=sm_90 -cubin``; the GPU runs are in
``test_fuse_new_shapes_gpu.py``.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hfuse.api import FusedKernel, fuse
from hfuse.errors import HFuseError
from hfuse.spec import Dim3, KernelSpec
from hfuse.partition import padded
from hfuse.layouts.partitions import even_split, partitions
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate, enumerate_candidates, refine_around
from hfuse.registers import RegisterCap

from corpus import cases as C  # tests/corpus/cases.py (tests/ is on sys.path via its conftest)

SYNC_RE = re.compile(r"hfuse_sync<\s*(\d+)u?\s*,\s*(\d+)u?\s*>")


def _spec(key: str, block) -> KernelSpec:
    return C.CASES[key].spec(Dim3.of(block))


def _nvcc(fused: FusedKernel, tmp_path: Path) -> str:
    """Compile the fused file as a user's build would; returns ptxas's report."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    path = fused.write(tmp_path / f"{fused.name}.cu")
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
                             "-o", str(path.with_suffix(".cubin")), str(path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"nvcc failed on {path}:\n{result.stdout}{result.stderr}"
    return result.stdout + result.stderr


def _part_code(source: str, index: int) -> str:
    marker = f"// ---- part {index}:"
    start = source.index(marker)
    end = source.index("// ---- ", start + len(marker))
    return re.sub(r"//[^\n]*", "", source[start:end])


def _kernel_branch(source: str, index: int) -> str:
    """The fused kernel's code for part ``index`` (up to the next part's comment)."""
    kernel = source[source.index("// ---- fused kernel"):]
    start = kernel.index(f"// part {index}:")
    nxt = kernel.find("// part ", start + 5)
    return kernel[start : nxt if nxt > 0 else len(kernel)]


def test_padded_sizes():
    assert [padded(n) for n in (1, 31, 32, 33, 120, 128, 200, 1000)] == [32, 32, 32, 64, 128, 128, 224, 1024]


# --------------------------------------------------------------------------- a 120-thread kernel with barriers + 192
@pytest.mark.nvcc
def test_120_thread_kernel_with_barriers_next_to_a_192_thread_kernel(tmp_path):
    fused = fuse([_spec("block_reduce", 120), _spec("histogram_dyn", 192)], register_cap=RegisterCap(min_blocks=2))
    p1, p2 = fused.parts
    # the partition: part 1 occupies 128 threads, part 2 starts at 128
    assert (p1.offset, p1.size, p1.threads, p1.padding, p1.block) == (0, 128, 120, 8, Dim3(120))
    assert (p2.offset, p2.size, p2.threads, p2.padding) == (128, 192, 192, 0)
    assert fused.block == Dim3(320) and fused.partition.block_threads == 320
    source = fused.source
    assert "__launch_bounds__(320, 2)" in source
    # the named barrier counts the padded size (a warp multiple), the part sees blockDim 120
    code1 = _part_code(source, 1)
    assert {(int(i), int(n)) for i, n in SYNC_RE.findall(code1)} == {(p1.barrier_id, 128)}
    assert {(int(i), int(n)) for i, n in SYNC_RE.findall(_part_code(source, 2))} == {(p2.barrier_id, 192)}
    branch = _kernel_branch(source, 1)
    assert "if (threadIdx.x < 128u) {  // part 1: block_reduce, threads [0, 128), block 120" in source
    assert "make_uint3(120u, 1u, 1u)" in branch  # blockDim of part 1
    assert "make_uint3(hf_tid, 0u, 0u)" in branch  # thread index 0..119
    assert re.search(r"if \(hf_tid < 120u\) \{", branch), "padding threads must skip the body"
    assert "(threadIdx.x - 128u)" in _kernel_branch(source, 2) and "hf_tid < " not in _kernel_branch(source, 2)
    # the header table and the launch helper show both sizes
    assert re.search(r"//\s*1\s+block_reduce\s+\[\s*0,\s*128\)\s+120\s+1, 128\s+\(120 threads \+ 8 padding\)", source)
    assert re.search(r"//\s*2\s+histogram_dyn\s+\[\s*128,\s*320\)\s+192\s+2, 192\s*$", source, re.M)
    assert "// 320 threads: 120 (+8 padding) + 192" in source
    assert "<<<(unsigned)hf_blocks, 320, hf_smem, stream>>>" in source
    report = _nvcc(fused, tmp_path)
    assert f"Function properties for {fused.name}" in report


# --------------------------------------------------------------------------- 2-D and 3-D blocks
@pytest.mark.nvcc
def test_10x12_block_unflattened_over_its_own_shape(tmp_path):
    fused = fuse([_spec("stencil2d", (10, 12)), _spec("block_reduce", 128)])
    p1, p2 = fused.parts
    assert (p1.offset, p1.size, p1.threads, p1.block) == (0, 128, 120, Dim3(10, 12))
    assert (p2.offset, p2.size) == (128, 128) and fused.block == Dim3(256)
    branch = _kernel_branch(fused.source, 1)
    assert "make_uint3(hf_tid % 10u, hf_tid / 10u, 0u)" in branch  # x fastest, over 10x12
    assert "make_uint3(10u, 12u, 1u)" in branch
    assert "if (hf_tid < 120u)" in branch
    code1 = _part_code(fused.source, 1)
    assert {int(n) for _, n in SYNC_RE.findall(code1)} == {128}
    # stencil2d's early return before its barrier: the threads that leave exit unless
    # their warp keeps an active thread
    assert "if (__any_sync(0xffffffffu, hf_active) && !hf_active) return;" in code1
    assert "10x12" in fused.source.split("// ---- hfuse support")[0]
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_two_padded_parts_and_a_3d_block(tmp_path):
    fused = fuse([_spec("stencil2d", (10, 12)), _spec("box3d", (5, 5, 5)), _spec("vec_offset", 64)])
    assert [(p.offset, p.size, p.threads) for p in fused.parts] == [(0, 128, 120), (128, 128, 125), (256, 64, 64)]
    assert fused.block == Dim3(320)
    branch = _kernel_branch(fused.source, 2)
    assert "make_uint3(hf_tid % 5u, hf_tid / 5u % 5u, hf_tid / 25u)" in branch
    assert "if (hf_tid < 125u)" in branch and "make_uint3(5u, 5u, 5u)" in branch
    assert fused.parts[1].barrier_id is None  # box3d does not synchronise: its padding just skips it
    _nvcc(fused, tmp_path)


@pytest.mark.nvcc
def test_vertical_fusion_runs_the_padded_part_last(tmp_path):
    fused = fuse([_spec("block_reduce", 120), _spec("vec_scale", 128)], layout="vertical")
    assert fused.block == Dim3(128)
    kernel = fused.source[fused.source.index("// ---- fused kernel"):]
    assert kernel.index("// part 2:") < kernel.index("// part 1:")  # padded part 1 runs last
    assert "if (threadIdx.x < 120u && hf_block <" in kernel
    assert {int(n) for _, n in SYNC_RE.findall(_part_code(fused.source, 1))} == {128}
    _nvcc(fused, tmp_path)
    with pytest.raises(HFuseError, match="vertical"):
        fuse([_spec("block_reduce", 120), _spec("vec_scale", 100)], layout="vertical")


def test_cooperative_groups_block_size_is_the_kernels():
    """hfuse_thread_block's size() reads the part's blockDim, not the barrier's padded count."""
    fused = fuse([_spec("cg_reduce", 120), _spec("vec_scale", 128)])
    assert "return ctx.blockDim.x * ctx.blockDim.y * ctx.blockDim.z;" in fused.source
    assert {int(n) for _, n in SYNC_RE.findall(_part_code(fused.source, 1))} <= {128}


def test_pack_uses_the_padded_block():
    fused = fuse([_spec("block_reduce", 120), _spec("vec_offset", 200)])
    assert [(p.offset, p.size) for p in fused.parts] == [(0, 128), (128, 224)]
    launch = fused.pack([[0] * 4, [0] * 4], [Dim3(40), Dim3(7)], [0, 0])
    assert launch.block == Dim3(352) and launch.grid == Dim3(40)


# --------------------------------------------------------------------------- the tuner's candidates
def test_tuner_candidates_with_a_120_thread_kernel():
    fixed = KernelSpec(C.CASES["block_reduce"].path, "block_reduce", 120)
    tunable = KernelSpec(C.CASES["vec_scale"].path, "vec_scale", 256, tunable=True)
    specs = [fixed, tunable]
    blocks = partitions(specs)  # fused block 128 + 256 = 384 by default
    assert blocks and all(b[0] == Dim3(120) for b in blocks)
    assert all(padded(b[0].size) + b[1].size == 384 for b in blocks)
    assert even_split(specs) == (Dim3(120), Dim3(256))
    candidates = enumerate_candidates(specs)
    assert candidates and all(c.fused_threads % 32 == 0 and c.fused_threads <= 1024 for c in candidates)
    assert Candidate(Fusion((Dim3(120), Dim3(256)))).fused_threads == 384
    refine_around(Candidate(Fusion((Dim3(120), Dim3(256)))), specs)  # does not choke
    for c in candidates[:3]:  # each candidate fuses
        fuse([s.with_block(b) for s, b in zip(specs, c.blocks)], layout=c.layout)
