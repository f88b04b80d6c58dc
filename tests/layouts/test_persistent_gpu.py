"""The persistent co-resident layout and the spatial split on a GPU: bit-equal to the
original kernels whatever the grid (one block, SMs x blocks per SM, every part block), the
mix or the split, launch after launch (the last block resets the counters)."""
from __future__ import annotations


import numpy as np
import pytest

import hfuse
from hfuse.api import device_source
from hfuse.spec import Dim3, KernelSpec

from gpu_harness import compiled, run
from layouts.test_persistent import ARITH, STREAM

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def _inputs(cp, seed: int, n_stream: int, n_arith: int):
    rng = np.random.default_rng(seed)
    x = cp.asarray(rng.standard_normal(n_stream, dtype=np.float32))
    y = cp.zeros(n_stream, cp.float32)
    z = cp.asarray(rng.standard_normal(n_arith, dtype=np.float32))
    return [x, y, np.int32(n_stream - 7)], [z, np.int32(n_arith - 3), np.int32(64)]


@pytest.mark.parametrize("layout", ["persistent:1:1", "persistent:2:2", "persistent:3:1", "spatial:30", "spatial:70:4"])
def test_bit_equal_to_the_originals_whatever_the_grid(cp, tmp_path, layout):
    stream, arith = tmp_path / "stream.cu", tmp_path / "arith.cu"
    stream.write_text(STREAM)
    arith.write_text(ARITH)
    specs = [KernelSpec(stream, "stream", 128), KernelSpec(arith, "arith", 256)]
    n_stream, n_arith = 1 << 20, 1 << 19
    grids = [Dim3(-(-n_stream // 128)), Dim3(-(-n_arith // 256))]
    expected = []
    args = _inputs(cp, 1, n_stream, n_arith)
    for spec, a, grid, out in zip(specs, args, grids, (1, 0)):
        original = device_source(spec)
        run(cp, compiled(cp, original.source, original.name_expression), grid, spec.block, a, 0)
        expected.append(cp.asnumpy(a[out]).tobytes())
    fused = hfuse.fuse(specs, layout=layout)
    kernel = compiled(cp, fused.source, fused.name_expression)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for limit in (1, sms * fused.layout.blocks_per_sm(2), None):  # None: a block per part block
        for _ in range(2):  # twice: the counters are back to zero for the second launch
            fresh = _inputs(cp, 1, n_stream, n_arith)
            launch = fused.pack(fresh, grids, [0, 0])
            grid = launch.grid if limit is None else Dim3(min(limit, launch.grid.x))
            run(cp, kernel, grid, launch.block, launch.args, launch.shared_mem)
            got = [cp.asnumpy(fresh[0][1]).tobytes(), cp.asnumpy(fresh[1][0]).tobytes()]
            assert got == expected, f"{layout}, grid {grid}"
