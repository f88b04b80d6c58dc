"""Differential GPU tests of the fusion compiler over the example corpus.

For every fusion of ``cases.GROUPS`` (pairs, a group of three, a group of four), for
three partitions (the tunable kernels take other block sizes) with and without
``RegisterCap(min_blocks=2)``, and for the vertical and inter-block layouts (block ranges,
interleaved, and SM-aware dispatch at 1:1 and 1:2:...) with and without the cap:
run the unfused kernels, snapshot their outputs, run the fused kernel on identical fresh
inputs (outputs reset to the same initial state) and require every output to be
bit-equal. All kernels are deterministic (integer atomics only).

Originals and fused kernels are compiled alike, with NVRTC through CuPy. Run with
``pytest tests/api/test_fuse_gpu.py -s`` to see the summary line
("GPU differential: N fusions (...), M configurations, ...").
"""
from __future__ import annotations

import hashlib
import os
import time

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.toolkit import cuda_include_dirs
from hfuse.registers import RegisterCap

pytestmark = pytest.mark.gpu


from corpus import cases as C  # tests/corpus/cases.py (tests/ is on sys.path via its conftest)

CAP = RegisterCap(min_blocks=2)
HANG_SECONDS = 30.0


GpuConfig = C.FusionConfig


def _configs() -> list[GpuConfig]:
    out: list[GpuConfig] = []
    for group in C.GROUPS:
        parts = C.partitions(group, limit=3)
        for blocks in parts:
            for cap in (None, CAP):
                out.append(GpuConfig(group, blocks, "horizontal", cap, number=len(out)))
        for cap in (None, CAP):
            out.append(GpuConfig(group, parts[0], "vertical", cap, number=len(out)))
        ratio = "dynamic:" + ":".join(str(n) for n in range(1, len(group) + 1))  # 1:2, 1:2:3, ...
        for layout in ("interblock", "interleaved", "dynamic", ratio):
            for cap in (None, CAP):
                out.append(GpuConfig(group, parts[0], layout, cap, number=len(out)))
    return out


CONFIGS = _configs()
_RESULTS: dict[str, str] = {}  # config id -> "passed" / failure text


# --------------------------------------------------------------------------- compiling
@pytest.fixture(scope="module")
def cp():
    cupy = pytest.importorskip("cupy")
    yield cupy
    _print_summary()


def _print_summary() -> None:
    if not _RESULTS:
        return
    passed = [k for k, v in _RESULTS.items() if v == "passed"]
    groups = {c.group for c in CONFIGS if c.id in _RESULTS}
    sizes = sorted({len(g) for g in groups})
    kinds = ", ".join(f"{sum(len(g) == n for g in groups)} of {n} kernels" for n in sizes)
    line = (f"GPU differential: {len(groups)} fusions ({kinds}), {len(_RESULTS)} configurations "
            f"(partitions x register caps x strategies), {len(passed)} bit-equal, {len(_RESULTS) - len(passed)} failed")
    print("\n" + line)


_MODULES: dict[tuple[str, str], object] = {}


def _function(cupy, source: str, expression: str):
    """The kernel ``expression`` of ``source``, compiled with NVRTC (cached)."""
    key = (hashlib.sha256(source.encode()).hexdigest(), expression)
    if key not in _MODULES:
        options = ("-std=c++17", *(f"-I{d}" for d in cuda_include_dirs()))
        if "<" in expression:
            module = cupy.RawModule(code=source, options=options, name_expressions=(expression,))
        else:  # extern "C" kernels: looked up by their plain name
            module = cupy.RawModule(code=source, options=options)
        _MODULES[key] = module.get_function(expression)
    return _MODULES[key]


def _wait(cupy, what: str) -> None:
    """Synchronise, but stop the session instead of hanging forever on a stuck barrier."""
    event = cupy.cuda.Event()
    event.record()
    deadline = time.monotonic() + HANG_SECONDS
    while not event.done:
        if time.monotonic() > deadline:
            pytest.exit(f"{what} did not finish in {HANG_SECONDS:.0f} s: a named barrier is probably waiting for "
                        "threads that exited (hang)", returncode=3)
        time.sleep(0.0005)
    cupy.cuda.Device().synchronize()


def _snapshot(cupy, launch, ) -> list[bytes]:
    return [cupy.asnumpy(launch.args[i]).tobytes() for i in launch.outputs]


def _seed(config: GpuConfig, j: int) -> np.random.Generator:
    return np.random.default_rng([20240611, config.number, j])


# --------------------------------------------------------------------------- the test
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_fused_equals_unfused(cp, config):
    _RESULTS[config.id] = "failed"
    cases = [C.CASES[k] for k in config.group]
    specs = C.specs(config.group, config.blocks)

    # unfused: each original kernel alone, on its own inputs
    expected = []
    for j, (case, spec) in enumerate(zip(cases, specs)):
        made = case.make(_seed(config, j), cp, spec.block)
        fn = _function(cp, case.path.read_text(), spec.instance)
        if made.smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = made.smem
        fn(made.grid.as_tuple(), spec.block.as_tuple(), tuple(made.args), shared_mem=made.smem)
        _wait(cp, f"unfused {spec.instance}")
        expected.append(_snapshot(cp, made))

    # fused: identical fresh inputs, outputs in the same initial state
    fused = fuse(specs, layout=config.layout, register_cap=config.cap)
    fn = _function(cp, fused.source, fused.name_expression)
    # SM-aware dispatch keeps counters in the module that its last block resets: its second
    # launch must be as right as its first, so it runs twice (fresh identical inputs each time).
    problems: list[str] = []
    for _ in range(2 if config.layout.startswith("dynamic") else 1):
        made = [case.make(_seed(config, j), cp, spec.block) for j, (case, spec) in enumerate(zip(cases, specs))]
        launch = fused.pack([m.args for m in made], [m.grid for m in made], [m.smem for m in made])
        if launch.shared_mem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = launch.shared_mem
        fn(launch.grid.as_tuple(), launch.block.as_tuple(), launch.args, shared_mem=launch.shared_mem)
        _wait(cp, f"fused {fused.name} ({config.id})")
        problems += _differences(cp, cases, made, expected)
    assert not problems, f"{config.id}:\n  " + "\n  ".join(problems)
    _RESULTS[config.id] = "passed"


def _differences(cp, cases, made, expected) -> list[str]:
    problems = []
    for j, (case, m, want) in enumerate(zip(cases, made, expected)):
        got = _snapshot(cp, m)
        for out_index, g, w in zip(m.outputs, got, want):
            if g != w:
                a = np.frombuffer(g, dtype=np.uint8)
                b = np.frombuffer(w, dtype=np.uint8)
                dtype = cp.asnumpy(m.args[out_index]).dtype
                ga, wa = a.view(dtype), b.view(dtype)
                bad = np.flatnonzero(ga != wa)
                problems.append(f"part {j + 1} {case.key} argument {out_index}: {bad.size} of {ga.size} elements differ, "
                                f"first at {bad[0]}: fused {ga[bad[0]]} vs unfused {wa[bad[0]]}")
    return problems


def test_summary(cp):
    """Runs last in this module: the counts the lead quotes."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # each xdist worker sees only the configurations it ran; each one's own test reports it
        pytest.skip("the summary counts the configurations of one process: run this module without -n for it")
    ran = [c for c in CONFIGS if c.id in _RESULTS]
    if not ran:
        pytest.skip("no differential configuration ran")
    _print_summary()
    assert len({c.group for c in ran}) >= 8
    failed = [k for k, v in _RESULTS.items() if v != "passed"]
    assert not failed, f"{len(failed)} configurations failed: {failed}"
