"""GPU twin of test_fuse_macro_arguments.py: kernels named with their files' macros
(``dequantize_block<QK4_0, QR4_0, dequantize_q4_0, float>``, ``shift_left<SCALE_SHIFT>``
where two files give SCALE_SHIFT two values), fused, bit-equal to the unfused kernels."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3

from gpu_harness import Launch, cdiv, differences
from test_fuse_macro_arguments import OTHER, Q4, Q8, ROWS

pytestmark = pytest.mark.gpu

BLOCKS = 300  # quantised blocks of 32 values


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def _quantised(rng, cp, scales: int, quants: int, signed: bool):
    """``BLOCKS`` packed blocks {half d; quants bytes} with finite scales, as bytes."""
    layout = np.dtype([("d", "<f2"), ("qs", "i1" if signed else "u1", quants)])
    blocks = np.zeros(BLOCKS, dtype=layout)
    blocks["d"] = rng.uniform(-scales, scales, BLOCKS).astype(np.float16)
    blocks["qs"] = rng.integers(-128 if signed else 0, 128 if signed else 256, (BLOCKS, quants))
    return cp.asarray(blocks.view(np.uint8))


def _dequantize(dtype, quants: int, signed: bool):
    def make(rng, cp, block: Dim3) -> Launch:
        k = BLOCKS * 32
        return Launch([_quantised(rng, cp, 4, quants, signed), cp.zeros(k, dtype=dtype), np.int64(k)],
                      Dim3(cdiv(k // 2, block.size)), 0, (1,))
    return make


def _shift(rows: int):
    def make(rng, cp, block: Dim3) -> Launch:
        n = 20_000
        return Launch([cp.asarray(rng.integers(-1000, 1000, n, dtype=np.int32)), cp.zeros(n, dtype=np.int32),
                       np.int32(n)], Dim3(cdiv(n, block.size * rows)), 0, (1,))
    return make


MAKERS = {"q4": _dequantize(np.float32, 16, False), "q8": _dequantize(np.float16, 32, True),
          "rows": _shift(4), "other": _shift(1)}
SPECS = {"q4": Q4, "q8": Q8, "rows": ROWS, "other": OTHER}


@pytest.mark.parametrize("pair", [("q4", "q8"), ("q8", "q4"), ("rows", "other"), ("other", "q4")])
def test_fused_equals_unfused(cp, pair):
    specs = [SPECS[p] for p in pair]
    fused = fuse(specs)
    makers = [lambda rng, cp, s=s, p=p: MAKERS[p](rng, cp, s.block) for s, p in zip(specs, pair)]
    problems = differences(cp, specs, makers, fused, [20261125, *map(len, pair)])
    assert not problems, "\n".join(problems)
