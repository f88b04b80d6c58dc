"""The runtime on a real GPU: limits, compile + launch, outputs, timing baselines."""
from __future__ import annotations

import re

import numpy as np
import pytest

from hfuse.launch import KernelLaunch, Output
from hfuse.runtime.compile import Compiler
from hfuse.runtime.binary import LaunchError
from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.execute import (
    ArgumentError, compare_outputs, prepare, read_outputs, run_once, snapshot_initial,
)
from hfuse.runtime.occupancy import occupancy
from hfuse.runtime.timing import LaunchGraph, Timer, time_alone, time_callable, time_graph, time_two_streams
from hfuse.spec import Dim3, KernelSpec

from .test_ptxas import SOURCE

pytestmark = pytest.mark.gpu

SMEM_SOURCE = r"""
extern "C" __global__ void big_smem(float* out, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = (float)i;
  __syncthreads();
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += buf[n - 1 - i];
  atomicAdd(out, s);
}
"""


@pytest.fixture(scope="module")
def cupy():
    import cupy

    return cupy


@pytest.fixture(scope="module")
def limits():
    return DeviceLimits.current()


@pytest.fixture(scope="module")
def compiler(limits):
    return Compiler(limits=limits)


@pytest.fixture(scope="module")
def timer(limits):
    return Timer(limits)


def hist_launch(cupy, n=1 << 20, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, size=n).astype(np.float32)
    return KernelLaunch(
        kernel=KernelSpec(file="hist.cu", name="hist", block=256, template_args=("float", "256")),
        args=[cupy.asarray(x), cupy.zeros(256, dtype=cupy.uint32), np.int32(n)],
        outputs=[Output(1)],
        grid=Dim3(132),
        source=SOURCE,
        label="hist",
    ), np.bincount(x.astype(np.int64) % 256, minlength=256).astype(np.uint32)


def add_launch(cupy, n=1 << 22):
    a = cupy.arange(n, dtype=cupy.float32)
    b = cupy.full(n, 2.0, dtype=cupy.float32)
    return KernelLaunch(
        kernel=KernelSpec(file="add.cu", name="add", block=256),
        args=[a, b, np.int32(n)],
        outputs=[Output(0)],
        grid=lambda blk: Dim3(-(-n // blk.size)),
        source=SOURCE,
        label="add",
    ), np.arange(n, dtype=np.float32) + 2.0


def test_current_limits_are_plausible(limits):
    assert limits.name and limits.compute_capability >= (7, 0)
    assert limits.sm_count >= 1 and limits.warp_size == 32
    assert limits.regs_per_sm >= 32768 and limits.regs_per_block >= 32768
    assert 1024 <= limits.max_threads_per_sm <= 4096 and limits.max_blocks_per_sm >= 16
    assert limits.smem_per_block_optin <= limits.smem_per_sm and limits.l2_bytes > 0
    # the driver's release as nvidia-smi shows it, with its CUDA level, e.g. '580.159.04 (CUDA 13.0)'
    assert re.fullmatch(r"(\d+(\.\d+)+ \()?CUDA \d+\.\d+\)?", limits.driver_version), limits.driver_version
    assert re.fullmatch(r"\d+\.\d+", limits.runtime_version)
    if "H100" in limits.name:
        assert limits.compute_capability == (9, 0) and limits.regs_per_sm == 65536
        assert limits.smem_per_sm == 233472 and limits.reserved_smem_per_block == 1024
        assert limits.max_blocks_per_sm == 32 and limits.sm_count in (114, 132)


def test_compile_launch_and_resources(compiler, cupy, limits):
    add = compiler.get(SOURCE, "add")
    r = add.resources
    assert 4 <= r.registers <= 64 and r.static_smem == 0 and r.max_threads_per_block == 1024
    if "ptxas info" in add.binary.log:
        assert r.spill_stores == 0  # from the -Xptxas -v log
    else:  # some NVRTC builds (seen: CUDA 13.2's on an H100) return no ptxas report: unknown, not 0
        assert r.spill_stores is None and r.spill_loads is None
    hist = compiler.get(SOURCE, "hist<float, 256>")
    assert hist.resources.static_smem == 1024 and hist.symbol == "_Z4histIfLi256EEvPKT_Pji"
    n = 1000
    a, b = cupy.ones(n, dtype=cupy.float32), cupy.full(n, 2.0, dtype=cupy.float32)
    add.launch(Dim3(4), Dim3(256), (a, b, np.int32(n)))
    cupy.cuda.get_current_stream().synchronize()
    assert (cupy.asnumpy(a) == 3.0).all()
    occ = occupancy(limits, r.registers, 256, r.static_smem)
    assert occ.blocks_per_sm >= 1


def test_dynamic_shared_memory_over_48k(compiler, cupy):
    k = compiler.get(SMEM_SOURCE, "big_smem")
    n = 16384  # 64 KiB of floats: needs the opt-in
    out = cupy.zeros(1, dtype=cupy.float32)
    k.launch(Dim3(1), Dim3(256), (out, np.int32(n)), shared_mem=n * 4)
    cupy.cuda.get_current_stream().synchronize()
    assert float(out.get()[0]) == float(sum(range(n)))


def test_run_once_restores_outputs(compiler, cupy):
    launch, expected = hist_launch(cupy)
    p = prepare(launch, compiler)
    assert p.grid == Dim3(132) and p.block == Dim3(256) and p.name == "hist"
    snap = snapshot_initial([p])
    first = run_once(p, snap)
    second = run_once(p, snap)  # a histogram accumulates: only restoring makes them equal
    assert compare_outputs([expected], first, p.outputs) == []
    assert compare_outputs(first, second, p.outputs) == []
    wrong = [first[0].copy()]
    wrong[0][3] += 1
    assert compare_outputs(wrong, second, p.outputs)


def test_grid_rule_and_read_outputs(compiler, cupy):
    launch, expected = add_launch(cupy, n=1 << 16)
    p = prepare(launch, compiler)
    assert p.grid == Dim3(256)
    assert compare_outputs([expected], run_once(p), p.outputs) == []
    assert read_outputs(p)[0].shape == (1 << 16,)


def test_argument_mismatch(compiler, cupy):
    launch, _ = add_launch(cupy, n=1024)
    with pytest.raises(ArgumentError, match="takes 3 parameters"):
        prepare(KernelLaunch(launch.kernel, launch.args[:2], launch.outputs, launch.grid, source=SOURCE), compiler)
    with pytest.raises(ArgumentError, match="4 bytes wide"):
        prepare(KernelLaunch(launch.kernel, [*launch.args[:2], np.int64(5)], launch.outputs, launch.grid,
                             source=SOURCE), compiler)
    with pytest.raises(ArgumentError, match="Python int"):
        prepare(KernelLaunch(launch.kernel, [*launch.args[:2], 5], launch.outputs, launch.grid, source=SOURCE),
                compiler)


def test_launch_error_names_kernel(compiler, cupy):
    add = compiler.get(SOURCE, "add")
    a = cupy.zeros(4, dtype=cupy.float32)
    with pytest.raises(LaunchError, match="'add'"):
        add.launch(Dim3(1), Dim3(2048), (a, a, np.int32(4)))


def test_timing_alone(compiler, cupy, timer):
    launch, _ = add_launch(cupy)
    p = prepare(launch, compiler)
    t = time_alone(p, timer=timer, warmup_ms=5, rep_ms=20)
    assert 0 < t.min_ms <= t.p20_ms <= t.median_ms <= t.p80_ms and t.n >= 10
    rotated = time_callable([lambda: p(), lambda: p()], timer=timer, warmup_ms=5, rep_ms=20)
    assert rotated.median_ms > 0


def test_two_streams_and_graph(compiler, cupy, timer):
    add, add_expected = add_launch(cupy)
    hist, hist_expected = hist_launch(cupy)
    pa, ph = prepare(add, compiler), prepare(hist, compiler)
    snap = snapshot_initial([pa, ph])
    kw = dict(timer=timer, warmup_ms=5, rep_ms=30)
    alone = [time_alone(pa, **kw).median_ms, time_alone(ph, **kw).median_ms]
    two = time_two_streams([pa, ph], setup=snap.restore, **kw)
    graph = time_graph([pa, ph], setup=snap.restore, **kw)
    assert two.median_ms > 0 and graph.median_ms > 0
    # Concurrent launches should not take longer than both in a row, with slack for noise.
    assert two.median_ms < 1.5 * sum(alone) and graph.median_ms < 1.5 * sum(alone)
    # The graph computes what the kernels compute.
    g = LaunchGraph([pa, ph])
    snap.restore(timer.stream)
    g(timer.stream)
    timer.stream.synchronize()
    assert compare_outputs([add_expected], read_outputs(pa), pa.outputs) == []
    assert compare_outputs([hist_expected], read_outputs(ph), ph.outputs) == []
