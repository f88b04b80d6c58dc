"""GPU twin of test_early_exit_call_sites.py: the paged-attention shape (a helper holding the
body, an early return on a length read through a ``const int* __restrict__``, barriers after
it), placed after a partner at thread 96, bit-equal to the unfused kernel on a grid where
some partitions have no work and leave."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

PARTNER = KernelSpec(C.CORPUS / "styles" / "partner.cu", "axpy", Dim3(96))
N, SEQS, PARTITIONS = 4096, 6, 4


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def test_a_uniform_early_return_in_a_helper_equals_unfused(cp, tmp_path):
    from test_early_exit_call_sites import OTHER, PAGED

    path = tmp_path / "paged.cu"
    path.write_text(PAGED + OTHER)
    spec = KernelSpec(path, "attention_v2", Dim3(128), ("128", "128", "256"))
    fused = fuse([PARTNER, spec])
    body = fused.source[fused.source.index("void attention_body__hf2"):]
    assert "hf_active" not in body  # the return stays one: the whole part leaves together

    def partner(rng, cp) -> Launch:
        return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)),
                       cp.asarray(rng.standard_normal(N, dtype=np.float32)), np.float32(1.5), np.int32(N)],
                      Dim3(cdiv(N, 96)), 0, (1,))  # axpy(x, y, a, n) writes y

    def paged(rng, cp) -> Launch:
        lens = rng.integers(1, PARTITIONS * 256, SEQS).astype(np.int32)  # some partitions past the end
        return Launch([cp.zeros(SEQS * PARTITIONS, dtype=np.float32),
                       cp.asarray(rng.standard_normal(SEQS * 128, dtype=np.float32)), cp.asarray(lens),
                       np.int32(PARTITIONS)], Dim3(1, SEQS, PARTITIONS), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [partner, paged], fused, [20261126, 29])
    assert not problems, "\n".join(problems)
