"""GPU twin of test_context_types.py: a functor the host made, whose ``operator()`` reads
``blockIdx``/``threadIdx``, taken by value by a kernel placed after a partner (thread
offset 96), bit-equal to the unfused kernel. The functor's 8 bytes travel as one 64-bit
word (CuPy passes arrays and scalars; the driver copies a parameter's size from it)."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

SOURCE = """
struct Affine {
  float scale;
  int shift;
  __device__ float operator()(const float* x, int n) const {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    return x[(i + shift) % n] * scale;
  }
};
template <typename F> __global__ void apply(F f, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = f(x, n);
}
"""
PARTNER = KernelSpec(C.CORPUS / "styles" / "partner.cu", "axpy", Dim3(96))
N = 10_000


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def _affine(scale: float, shift: int) -> np.uint64:
    packed = np.array([(scale, shift)], dtype=[("scale", "<f4"), ("shift", "<i4")]).tobytes()
    return np.frombuffer(packed, dtype=np.uint64)[0]


def _partner(rng, cp) -> Launch:
    x = cp.asarray(rng.standard_normal(N, dtype=np.float32))
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), x, np.float32(1.5), np.int32(N)],
                  Dim3(cdiv(N, 96)), 0, (1,))  # axpy(x, y, a, n) writes y


def _apply(block: Dim3):
    def make(rng, cp) -> Launch:
        return Launch([_affine(float(rng.uniform(0.5, 2.0)), int(rng.integers(1, 100))),
                       cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(N, dtype=np.float32),
                       np.int32(N)], Dim3(cdiv(N, block.size)), 0, (2,))
    return make


@pytest.mark.parametrize("block", [128, 256])
def test_a_host_made_functor_fused_after_a_partner_equals_unfused(cp, tmp_path, block):
    path = tmp_path / "affine.cu"
    path.write_text(SOURCE)
    spec = KernelSpec(path, "apply", Dim3(block), ("Affine",))
    fused = fuse([PARTNER, spec])
    assert "Affine__hf2_host" in fused.source
    problems = differences(cp, [PARTNER, spec], [_partner, _apply(spec.block)], fused, [20261126, block])
    assert not problems, "\n".join(problems)


def test_a_member_that_synchronises_and_calls_a_block_reading_helper_equals_unfused(cp, tmp_path):
    # the member's barrier is the part's, the helper it calls is the part's copy (before: an
    # internal error, and a helper left out)
    from test_context_types import MEMBERS

    path = tmp_path / "members.cu"
    path.write_text(MEMBERS)
    spec = KernelSpec(path, "tiled", Dim3(128))
    fused = fuse([PARTNER, spec])

    def tiled(rng, cp) -> Launch:  # one block: every block of 'tiled' writes the same 128 values
        return Launch([cp.asarray(rng.standard_normal(128, dtype=np.float32))], Dim3(1), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [_partner, tiled], fused, [20261126, 7])
    assert not problems, "\n".join(problems)


def test_members_defined_outside_their_class_equal_unfused(cp, tmp_path):
    from test_context_types import OUTSIDE

    path = tmp_path / "outside.cu"
    path.write_text(OUTSIDE)
    spec = KernelSpec(path, "members_outside", Dim3(128))
    fused = fuse([PARTNER, spec])

    def members_outside(rng, cp) -> Launch:
        return Launch([cp.zeros(N, dtype=np.int32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [_partner, members_outside], fused, [20261126, 11])
    assert not problems, "\n".join(problems)


def test_default_member_initialisers_that_read_the_block_equal_unfused(cp, tmp_path):
    from test_context_types import INITIALISERS

    path = tmp_path / "initialisers.cu"
    path.write_text(INITIALISERS)
    spec = KernelSpec(path, "initialised", Dim3(128))
    fused = fuse([PARTNER, spec])

    def initialised(rng, cp) -> Launch:
        return Launch([cp.zeros(N, dtype=np.int32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [_partner, initialised], fused, [20261126, 13])
    assert not problems, "\n".join(problems)


def test_a_members_early_return_before_its_barrier_equals_unfused(cp, tmp_path):
    # 96 of the last block's 128 threads have work: its last warp returns whole before the barrier
    from test_context_types import MEMBER_RETURN

    path = tmp_path / "member_return.cu"
    path.write_text(MEMBER_RETURN)
    spec = KernelSpec(path, "member_return", Dim3(128))
    fused = fuse([PARTNER, spec])

    def member_return(rng, cp) -> Launch:
        n = 992
        return Launch([cp.asarray(rng.standard_normal(n, dtype=np.float32)), np.int32(n)], Dim3(cdiv(n, 128)), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [_partner, member_return], fused, [20261126, 17])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kernel, args", [("warp_ids", ()), ("load_rows", ("float",)), ("load_rows", ("__half",))])
def test_static_members_that_read_the_block_equal_unfused(cp, tmp_path, kernel, args):
    # the part sits at thread 96: a static member reading the fused block's threadIdx would be off
    from test_context_types import OTHER, STATICS

    path = tmp_path / "statics.cu"
    path.write_text("#include <type_traits>\n" + STATICS + OTHER)
    spec = KernelSpec(path, kernel, Dim3(128), args)
    fused = fuse([PARTNER, spec])

    def statics(rng, cp) -> Launch:
        if kernel == "warp_ids":
            return Launch([cp.zeros(N, dtype=np.int32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (0,))
        dtype = np.float16 if args == ("__half",) else np.float32
        x = cp.asarray(rng.standard_normal(N).astype(dtype))
        return Launch([x, cp.zeros(N, dtype=np.float32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (1,))

    problems = differences(cp, [PARTNER, spec], [_partner, statics], fused, [20261126, 19])
    assert not problems, "\n".join(problems)


def test_a_crtp_base_that_reads_the_block_equals_unfused(cp, tmp_path):
    from test_context_types import CRTP, OTHER

    path = tmp_path / "crtp.cu"
    path.write_text(CRTP + OTHER)
    spec = KernelSpec(path, "crtp_k", Dim3(128))
    fused = fuse([PARTNER, spec])

    def crtp(rng, cp) -> Launch:
        return Launch([cp.zeros(N, dtype=np.int32), np.int32(rng.integers(1, 1000)), np.int32(N)],
                      Dim3(cdiv(N, 128)), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [_partner, crtp], fused, [20261126, 23])
    assert not problems, "\n".join(problems)


def test_a_traits_structs_static_body_called_through_the_template_parameter_equals_unfused(cp, tmp_path):
    # xformers' shape: the kernel is KT::run(...), a static member of its traits struct that
    # reads the block; the part sits at thread 96, where the original's run would read the wrong rows
    from test_context_types import OTHER, TRAITS

    path = tmp_path / "traits.cu"
    path.write_text(TRAITS + OTHER)
    spec = KernelSpec(path, "traits_kernel", Dim3(128), ("RowTraits<float>", "float"))
    fused = fuse([PARTNER, spec])
    assert fused.layout.name == "horizontal"

    def traits(rng, cp) -> Launch:  # (4 rows a thread)
        return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(N, dtype=np.float32),
                       np.int32(N)], Dim3(cdiv(N, 4 * 128)), 0, (1,))

    problems = differences(cp, [PARTNER, spec], [_partner, traits], fused, [20261207, 3])
    assert not problems, "\n".join(problems)


def test_a_host_made_functors_static_member_called_through_its_parameter_equals_unfused(cp, tmp_path):
    # Op::id() reads the lane from threadIdx; at thread offset 96 the original's would read the fused block's
    from test_context_types import OTHER, TRAITS

    path = tmp_path / "host_op.cu"
    path.write_text(TRAITS + OTHER)
    spec = KernelSpec(path, "host_op", Dim3(128), ("Lane",))
    fused = fuse([PARTNER, spec])

    def host_op(rng, cp) -> Launch:  # (Lane is one float: CuPy passes a float32 scalar by its 4 bytes)
        return Launch([cp.zeros(128, dtype=np.float32), np.float32(rng.uniform(0.5, 2.0))], Dim3(1), 0, (0,))

    problems = differences(cp, [PARTNER, spec], [_partner, host_op], fused, [20261207, 5])
    assert not problems, "\n".join(problems)


def test_a_derived_reducer_made_through_its_bases_alias_equals_unfused(cp, tmp_path):
    # Transformer Engine's reducers: the derived one makes its base as Base(params, lane), its traits
    # name it Ktraits::Reducer; at thread 96 the original's warp and lane ids would be the fused block's
    from test_context_types import OTHER, REDUCERS

    path = tmp_path / "reducers.cu"
    path.write_text(REDUCERS + OTHER)
    spec = KernelSpec(path, "block_sums", Dim3(128), ("NormTraits<4>",))
    fused = fuse([PARTNER, spec])
    assert fused.layout.name == "horizontal"
    blocks = cdiv(N, 128)

    def sums(rng, cp) -> Launch:  # (ReduceParams is one float: CuPy passes a float32 scalar by its 4 bytes)
        return Launch([np.float32(rng.uniform(0.5, 2.0)),
                       cp.asarray(rng.standard_normal(blocks * 128, dtype=np.float32)),
                       cp.zeros(blocks, dtype=np.float32)], Dim3(blocks), 0, (2,))

    problems = differences(cp, [PARTNER, spec], [_partner, sums], fused, [20261207, 11])
    assert not problems, "\n".join(problems)
