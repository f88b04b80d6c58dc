"""GPU twin of test_fuse_real_cpp.py's installed-library macros: kernels written with
``FAKELIB_KERNEL_LOOP``, ``FAKELIB_GLOBAL_TID`` and ``FAKELIB_SYNC()`` (a header given with
``-isystem``), fused after a partner at thread offset 96, bit-equal to the unfused kernels.
(Kept as written, ``FAKELIB_GLOBAL_TID`` once read the fused block's own threadIdx.)"""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

LIBRARY_MACROS = C.CORPUS / "real_cpp" / "library_macros.cu"
SYSINCLUDE = C.CORPUS / "real_cpp" / "sysinclude"
PARTNER = KernelSpec(C.CORPUS / "styles" / "partner.cu", "axpy", Dim3(96))
N = 10_000


def _partner(rng, cp) -> Launch:
    x = cp.asarray(rng.standard_normal(N, dtype=np.float32))
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), x, np.float32(1.5), np.int32(N)],
                  Dim3(cdiv(N, 96)), 0, (0,))


MAKERS = {
    "scale_loop": lambda rng, cp, b: Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), np.float32(0.5),
                                             np.int32(N)], Dim3(cdiv(N, 4 * b.size)), 0, (0,)),
    "offset_by_index": lambda rng, cp, b: Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), np.int32(N)],
                                                 Dim3(cdiv(N, b.size)), 0, (0,)),
    "reverse_tiles": lambda rng, cp, b: Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)),
                                                cp.zeros(N, dtype=np.float32), np.int32(N)], Dim3(cdiv(N, b.size)), 0,
                                               (1,)),
}


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("kernel, block", [("scale_loop", 256), ("offset_by_index", 128), ("reverse_tiles", 128)])
def test_fused_after_the_partner_equals_unfused(cp, kernel, block):
    options = CompileOptions.from_flags(system_include_dirs=[str(SYSINCLUDE)])
    spec = KernelSpec(LIBRARY_MACROS, kernel, Dim3(block), options=options)
    fused = fuse([PARTNER, spec], options=options)
    makers = [_partner, lambda rng, cp: MAKERS[kernel](rng, cp, spec.block)]
    problems = differences(cp, [PARTNER, spec], makers, fused, [20261125, block], flags=[f"-I{SYSINCLUDE}"])
    assert not problems, "\n".join(problems)
