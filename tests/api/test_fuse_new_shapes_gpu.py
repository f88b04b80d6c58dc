"""GPU: padded blocks and the newly safe early-exit shapes, bit-equal to the unfused kernels.

Like test_fuse_gpu.py: each original kernel runs alone on fresh inputs, then the fused
kernel runs on identical fresh inputs, and every output must be bit-equal. Padded
fusions (120 threads with barriers, 10x12, 5x5x5, vertical) and early returns before a
barrier in a loop, before a helper that synchronises, before a full-mask warp shuffle and
before ``__syncthreads_or/count``, a masked thread's work before its return
(tests/corpus/early_exit/shapes.cu), horizontally and vertically. A fused kernel that hangs stops the session after 30 s instead of forever.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C  # tests/corpus/cases.py (tests/ is on sys.path via its conftest)

pytestmark = pytest.mark.gpu

SHAPES = C.CORPUS / "early_exit" / "shapes.cu"
N = 10_045  # the last block is partial and its cut splits a warp, for every block size used here


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _make_shape(kernel: str):
    def make(rng, cp, block: Dim3) -> C.Launch:
        data = cp.asarray(rng.integers(-1000, 1000, N, dtype=np.int32))
        grid = Dim3(_cdiv(N, block.size))
        size = {"ee_tree_sum": grid.x + N, "ee_warp_first": N, "ee_helper": 2 * N, "ee_vote": N}[kernel]
        out = cp.asarray(np.full(size, -7, dtype=np.int32))
        return C.Launch([data, out, np.int32(N)], grid, 0, (1,))
    return make


@dataclass(frozen=True)
class Kernel:
    spec: KernelSpec
    make: object


def _corpus(key: str, block) -> Kernel:
    case = C.CASES[key]
    return Kernel(case.spec(Dim3.of(block)), case.make)


def _shape(name: str, block) -> Kernel:
    return Kernel(KernelSpec(SHAPES, name, Dim3.of(block)), _make_shape(name))


def _ee_tiles(rng, cp, block: Dim3) -> C.Launch:
    grid = Dim3(_cdiv(N, block.size))
    rounds = cp.asarray(rng.integers(0, 100, grid.x, dtype=np.int32))
    data = cp.asarray(rng.integers(-1000, 1000, N, dtype=np.int32))
    out = cp.asarray(np.full(N, -7, dtype=np.int32))
    return C.Launch([rounds, data, out, np.int32(N)], grid, 0, (2,))


def _ee_accumulate(rng, cp, block: Dim3) -> C.Launch:
    n = 3001  # (the last block's threads past n return before the barrier)
    values = cp.asarray(rng.integers(-50, 50, 2 * 128, dtype=np.int32))
    weights = cp.asarray(rng.integers(-50, 50, 128 * n, dtype=np.int32))
    out = cp.asarray(rng.integers(-1000, 1000, 2 * n, dtype=np.int32))
    return C.Launch([values, weights, out, np.int32(n)], Dim3(_cdiv(n, block.size)), 0, (2,))


CONFIGS = {
    "padded-120-with-barriers+192": ([_corpus("block_reduce", 120), _corpus("histogram_dyn", 192)], "horizontal"),
    "padded-10x12+5x5x5+64": ([_corpus("stencil2d", (10, 12)), _corpus("box3d", (5, 5, 5)), _corpus("vec_offset", 64)],
                              "horizontal"),
    "padded-vertical": ([_corpus("block_reduce", 120), _corpus("vec_scale", 128)], "vertical"),
    "loop-barrier+warp-shuffle": ([_shape("ee_tree_sum", 256), _shape("ee_warp_first", 128)], "horizontal"),
    "helper+vote+stencil": ([_shape("ee_helper", 128), _shape("ee_vote", 256), _corpus("stencil2d", (16, 16))],
                            "horizontal"),
    "early-exit-padded": ([_shape("ee_tree_sum", 120), _shape("ee_helper", 120), _shape("ee_warp_first", 200)],
                          "horizontal"),
    "early-exit-vertical": ([_shape("ee_tree_sum", 256), _shape("ee_helper", 256), _shape("ee_vote", 128)], "vertical"),
    # a masked thread's work before its return, rounds from a read-only table moved to the tile
    "tile-renderer+tree-sum": ([Kernel(KernelSpec(SHAPES, "ee_tiles", Dim3(128)), _ee_tiles),
                                _shape("ee_tree_sum", 120)], "horizontal"),
    "tile-renderer-vertical": ([Kernel(KernelSpec(SHAPES, "ee_tiles", Dim3(256)), _ee_tiles),
                                _corpus("vec_scale", 128)], "vertical"),
    # a register accumulator zeroed by '= {}' after the barrier, threads past the row's end gone before it
    "gemv-accumulator+tree-sum": ([Kernel(KernelSpec(SHAPES, "ee_accumulate", Dim3(128), ("2",)), _ee_accumulate),
                                   _shape("ee_tree_sum", 120)], "horizontal"),
}


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


from test_fuse_gpu import _function, _wait  # noqa: E402  (one module cache and hang guard for both)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_fused_equals_unfused(cp, name):
    kernels, layout = CONFIGS[name]
    seeds = [np.random.default_rng([20241123, j, len(name)]) for j in range(len(kernels))]
    expected = []
    for k, rng in zip(kernels, seeds):
        made = k.make(rng, cp, k.spec.block)
        args = k.spec.template_args
        fn = _function(cp, k.spec.file.read_text(), f"{k.spec.name}<{', '.join(args)}>" if args else k.spec.name)
        fn(made.grid.as_tuple(), k.spec.block.as_tuple(), tuple(made.args), shared_mem=made.smem)
        _wait(cp, f"unfused {k.spec.name}")
        expected.append([cp.asnumpy(made.args[i]).tobytes() for i in made.outputs])

    fused = fuse([k.spec for k in kernels], layout=layout)
    assert any(p.padding for p in fused.parts) or "hf_active" in fused.source, "the configuration tests nothing new"
    seeds = [np.random.default_rng([20241123, j, len(name)]) for j in range(len(kernels))]
    made = [k.make(rng, cp, k.spec.block) for k, rng in zip(kernels, seeds)]
    launch = fused.pack([m.args for m in made], [m.grid for m in made], [m.smem for m in made])
    fn = _function(cp, fused.source, fused.name)
    fn(launch.grid.as_tuple(), launch.block.as_tuple(), launch.args, shared_mem=launch.shared_mem)
    _wait(cp, f"fused {fused.name} ({name})")

    problems = []
    for k, m, want in zip(kernels, made, expected):
        for index, w in zip(m.outputs, want):
            got = cp.asnumpy(m.args[index])
            ref = np.frombuffer(w, dtype=got.dtype)
            if got.tobytes() != w:
                bad = np.flatnonzero(got.ravel() != ref)
                problems.append(f"{k.spec.name} argument {index}: {bad.size} of {ref.size} differ, first at {bad[0]}: "
                                f"fused {got.ravel()[bad[0]]} vs unfused {ref[bad[0]]}")
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


# ee_params takes its parameter block by value: a NumPy structured scalar laid out as the C
# struct (aligned), which CuPy passes by its bytes
EE_PARAMS = np.dtype([("in", np.uint64), ("out", np.uint64), ("trace", np.uint64), ("n", np.int32),
                      ("rounds", np.int32)], align=True)


def _ee_params(cp, rng, rounds: int):
    data = cp.asarray(rng.integers(-1000, 1000, N, dtype=np.int32))
    out, trace = (cp.asarray(np.full(N, -7, dtype=np.int32)) for _ in range(2))
    block = np.zeros((), dtype=EE_PARAMS)
    block["in"], block["out"], block["trace"] = data.data.ptr, out.data.ptr, trace.data.ptr
    block["n"], block["rounds"] = N, rounds
    return block[()], (data, out, trace)


@pytest.mark.parametrize("rounds", [0, 5])
def test_a_parameter_block_with_a_member_written_equals_unfused(cp, rounds):
    spec = KernelSpec(SHAPES, "ee_params", Dim3(128))
    partner = _corpus("vec_scale", 128)
    grid = Dim3(_cdiv(N, 128))
    rng = np.random.default_rng([20261128, rounds])
    params, (_, out, trace) = _ee_params(cp, rng, rounds)
    fn = _function(cp, SHAPES.read_text(), "ee_params")
    fn(grid.as_tuple(), spec.block.as_tuple(), (params,))
    _wait(cp, "unfused ee_params")
    want = (cp.asnumpy(out), cp.asnumpy(trace))

    fused = fuse([partner.spec, spec])
    assert fused.layout.name == "horizontal" and "hf_active" in fused.source
    rng = np.random.default_rng([20261128, rounds])
    params, (_, out, trace) = _ee_params(cp, rng, rounds)
    other = partner.make(np.random.default_rng(7), cp, partner.spec.block)
    launch = fused.pack([other.args, [params]], [other.grid, grid], [other.smem, 0])
    _function(cp, fused.source, fused.name)(launch.grid.as_tuple(), launch.block.as_tuple(), launch.args,
                                             shared_mem=launch.shared_mem)
    _wait(cp, f"fused {fused.name}")
    assert cp.asnumpy(out).tobytes() == want[0].tobytes()
    assert cp.asnumpy(trace).tobytes() == want[1].tobytes()
