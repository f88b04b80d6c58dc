"""GPU twin of test_fuse_real_cpp.py's static shared memory outside the kernel: a helper's
scratch array and a file-scope ``__shared__`` buffer, each part with its own, bit-equal to
the unfused kernels (fused side by side, once they shared one and wrote other values)."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

SCRATCH = C.CORPUS / "real_cpp" / "shared_scratch.cu"
N = 1 << 14


def _make(rng, cp) -> Launch:
    x = cp.asarray(rng.standard_normal(N, dtype=np.float32))
    return Launch([x, cp.zeros(N, dtype=np.float32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (1,))


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
@pytest.mark.parametrize("first, second", [("neighbour_diff", "neighbour_sum"), ("neighbour_diff", "neighbour_diff"),
                                           ("reverse_block", "reverse_block"), ("reverse_block", "neighbour_sum")])
def test_each_part_has_its_own_static_shared_memory(cp, first, second, layout):
    specs = [KernelSpec(SCRATCH, first, Dim3(128)), KernelSpec(SCRATCH, second, Dim3(128))]
    fused = fuse(specs, layout=layout)
    problems = differences(cp, specs, [_make, _make], fused, [20261125, len(first), len(second)])
    assert not problems, "\n".join(problems)
