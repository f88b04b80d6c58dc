"""GPU checks of the four crypto kernels against the CPU references (needs CuPy and a GPU).

Self-contained: a tiny local launcher (cupy.RawModule) runs each ``KernelLaunch`` from
``hfuse.bench.workloads.crypto``; every recorded hash is compared bit for bit with
``hfuse.bench.reference.crypto`` and the found nonces as a set.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hfuse.bench.workloads import crypto as wl
from hfuse.spec import Dim3

pytestmark = pytest.mark.gpu

NAMES = ["sha256", "blake256", "blake2b", "ethash"]

_FUNCTIONS: dict = {}


def _function(launch):
    """The compiled kernel (NVRTC through CuPy; CuPy adds the device's -arch itself)."""
    import cupy

    name = launch.kernel.instance
    key = (str(launch.kernel.file), name)
    if key not in _FUNCTIONS:
        src = launch.source if launch.source is not None else Path(launch.kernel.file).read_text()
        mod = cupy.RawModule(code=src, options=(), name_expressions=(name,))
        _FUNCTIONS[key] = mod.get_function(name)
    return _FUNCTIONS[key]


def _run(launch, grid: Dim3 | None = None) -> None:
    import cupy

    fn = _function(launch)
    g = grid if grid is not None else launch.grid_for()
    b = launch.kernel.block
    fn(g.as_tuple(), b.as_tuple(), tuple(launch.args), shared_mem=launch.smem_for())
    cupy.cuda.Device().synchronize()


def _check(launch, name: str, recorded: bool, dag_host=None) -> int:
    values, found = wl.reference_outputs(launch, name, dag_host=dag_host)
    a = launch.args
    if recorded:
        hashes = a[wl.ARG_HASHES].get()
        bad = np.nonzero(hashes != values)[0]
        assert bad.size == 0, (
            f"{name}: {bad.size} of {values.size} hashes differ; first at i={bad[0]}: "
            f"gpu {int(hashes[bad[0]]):#018x} ref {int(values[bad[0]]):#018x}")
    else:
        assert isinstance(a[wl.ARG_HASHES], np.uint64) and int(a[wl.ARG_HASHES]) == 0
    count = int(a[wl.ARG_COUNT].get()[0])
    buf = a[wl.ARG_FOUND].get()
    assert count == len(found), f"{name}: found_count {count}, reference {len(found)}"
    assert count <= buf.size
    assert np.array_equal(np.sort(buf[:count]), found)
    assert np.all(buf[count:] == wl.FOUND_SENTINEL)
    return count


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("which", [0, 1])
def test_small_sizes_match_reference(name, which):
    w = wl.WORKLOADS[name]
    size = w.test_sizes[which]
    launch = w.make(size, seed=1 + which, small=True)
    assert launch.kernel.block == Dim3(128) and launch.grid_free and not launch.kernel.tunable
    _run(launch)
    hits = _check(launch, name, recorded=True)
    assert hits > 0  # the small target hits 1 in 16


@pytest.mark.parametrize("name", NAMES)
def test_grid_stride_loop_with_a_tiny_grid(name):
    w = wl.WORKLOADS[name]
    launch = w.make(w.test_sizes[1], seed=5, small=True).with_grid(Dim3(3))
    _run(launch)  # 384 threads, each hashing many nonces
    _check(launch, name, recorded=True)


@pytest.mark.parametrize("name", NAMES)
def test_benchmark_mode_records_only_found_nonces(name):
    size = 4000 if name == "ethash" else 20000
    kw = {"dag_bytes": wl.ETHASH_TEST_DAG_BYTES} if name == "ethash" else {}
    launch = wl.WORKLOADS[name].make(size, seed=3, small=False, target=(1 << 58) - 1, **kw)
    assert [o.index for o in launch.outputs] == [wl.ARG_COUNT, wl.ARG_FOUND]
    _run(launch)
    hits = _check(launch, name, recorded=False)
    assert 0 < hits <= wl.BENCH_MAX_FOUND


def test_benchmark_default_launch_runs():
    # the real benchmark configuration at a reduced size: null hashes, low target
    launch = wl.WORKLOADS["sha256"].make(1 << 16, seed=4)
    _run(launch)
    _check(launch, "sha256", recorded=False)


def test_ethash_default_one_gib_dag():
    import cupy

    launch = wl.make_ethash(1000, seed=0, small=True, dag_bytes=wl.ETHASH_DAG_BYTES)
    dag = launch.args[wl.ARG_DAG]
    assert isinstance(dag, cupy.ndarray) and dag.dtype == cupy.uint32
    assert dag.nbytes == 1 << 30
    assert int(launch.args[wl.ARG_NUM_PAGES]) == (1 << 30) // 128
    again = wl.make_ethash(10, seed=0, small=True, dag_bytes=wl.ETHASH_DAG_BYTES)
    assert again.args[wl.ARG_DAG] is dag  # cached per (size, seed)
    _run(launch)
    dag_host = dag.get()
    assert len(np.unique(dag_host[:4096])) > 4000  # random words
    _check(launch, "ethash", recorded=True, dag_host=dag_host)
    del dag_host
    wl.clear_dag_cache()
