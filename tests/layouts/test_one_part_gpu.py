"""Early returns before barriers where each fused block runs one block of one kernel: the
part's barriers are the block's own (``partition.WHOLE_BLOCK_BARRIER``) and its returns stay
as written, so the threads that return exit and release the barrier as in the kernel's own
launch. Kernels the horizontal layout must refuse (tests/corpus/errors), fused in each
inter-block layout after a partner, bit-equal to the originals on a grid whose last block
is partly past the end."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

N = 256 * 7 + 100  # the last block: 100 threads work, 156 return before the barriers
PARTNER = KernelSpec(C.CORPUS / "vec_scale.cu", "vec_scale", Dim3(128))


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def _partner(rng, cp) -> Launch:
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(N, dtype=np.float32),
                   np.float32(1.5), np.float32(-0.25), np.int32(N)], Dim3(cdiv(N, 128)), 0, (1,))


def _ints(rng, cp, n: int = N, high: int = 1000):
    return cp.asarray(rng.integers(0, high, n, dtype=np.int32))


MAKERS = {
    "return_then_helper": lambda rng, cp: Launch([_ints(rng, cp), cp.zeros(N, dtype=np.int32), np.int32(N)],
                                                 Dim3(cdiv(N, 256)), 0, (1,)),
    "loop_bound_loaded": lambda rng, cp: Launch([_ints(rng, cp), _ints(rng, cp, cdiv(N, 256), 5),
                                                 cp.zeros(N, dtype=np.int32), np.int32(N)], Dim3(cdiv(N, 256)), 0, (2,)),
}
FILES = {"return_then_helper": "return_before_helper_sync.cu", "loop_bound_loaded": "loop_bound_loaded.cu"}


@pytest.mark.parametrize("layout", [None, "interblock", "interleaved", "dynamic"])
@pytest.mark.parametrize("kernel", sorted(MAKERS))
def test_early_returns_before_barriers_equal_unfused(cp, kernel, layout):
    spec = KernelSpec(C.ERRORS / FILES[kernel], kernel, Dim3(256))
    fused = fuse([PARTNER, spec], layout=layout)  # None: hfuse picks interblock itself
    assert "hf_active" not in fused.source and "hfuse_sync<0, 256>();" in fused.source
    problems = differences(cp, [PARTNER, spec], [_partner, MAKERS[kernel]], fused, [20261126, 31])
    assert not problems, "\n".join(problems)
