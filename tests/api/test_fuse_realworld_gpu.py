"""The real-world corpus on a GPU: fused pairs verified bit for bit through ``hfuse tune``.

Each pair is tuned with correctness-only settings (one partition, no register caps,
very short timing, ``min_gain=-100`` so the plan always fuses): every candidate is run
on fresh random inputs and compared bit for bit with the unfused kernels, which the
tuner compiles from their device side alone (the sample files keep their ``main()``).
Kernels that read ``__constant__`` tables get their data through ``KernelLaunch.symbols``.

Which pairs: by default a ring over the fusable kernels, in both orders, so every kernel
is the first and the second part of two fusions; ``HFUSE_REALWORLD_PAIRS=all`` takes every
ordered pair (``all:2/3``, the second of three shards, for runs with a time limit),
``sample:N`` N of the others at random (seed 0). Then ``launcher_for(plan)`` is run with
constant data on new inputs for the pairs whose second part reads a ``__constant__``
table or uses a ``SharedMemory<T>`` wrapper.

Every pair is tuned afresh (a new plan cache per test session), but the compiled
originals are shared through the cache's binaries, also between the processes of
``pytest -n`` (pytest-xdist), which is how every ordered pair is verified on one GPU.
"""
from __future__ import annotations

import itertools
import os
import random
from dataclasses import replace

import numpy as np
import pytest

from hfuse.layouts import HORIZONTAL
from hfuse.api import device_source
from hfuse.launch import KernelLaunch, Output
from hfuse.runtime.compile import Compiler
from hfuse.runtime.execute import prepare, run_once
from hfuse.tuning.tuner import TuneSettings, tune
from hfuse.tuning.launcher import launcher_for

from corpus.realworld import manifest as M

from test_fuse_realworld import KERNELS, _refusal, own_options, request_options

pytestmark = pytest.mark.gpu

SETTINGS = TuneSettings(caps=False, neighbour_caps=False, refine=False, balance_grids=False,
                        warmup_ms=1, rep_ms=2, flush_l2=False, min_gain=-100.0)
FUSABLE = [k for k in KERNELS if _refusal(k) is None]


def _ring() -> list[tuple[M.RealKernel, M.RealKernel]]:
    ring = [(FUSABLE[i], FUSABLE[(i + 1) % len(FUSABLE)]) for i in range(len(FUSABLE))]
    return ring + [(b, a) for a, b in ring]


def _pairs() -> list[tuple[M.RealKernel, M.RealKernel]]:
    """``HFUSE_REALWORLD_PAIRS``: unset, the ring; ``all``, every ordered pair; ``sample:N``,
    N ordered pairs drawn (seed 0) from those outside the ring."""
    chosen = os.environ.get("HFUSE_REALWORLD_PAIRS", "")
    every = list(itertools.permutations(FUSABLE, 2))
    if chosen == "all":
        return every
    if chosen.startswith("all:"):
        shard, shards = (int(n) for n in chosen[4:].split("/"))
        return every[shard - 1::shards]
    if chosen.startswith("sample:"):
        ring = {(a.key, b.key) for a, b in _ring()}
        rest = [p for p in every if (p[0].key, p[1].key) not in ring]
        return random.Random(0).sample(rest, min(int(chosen.split(":")[1]), len(rest)))
    return _ring()


PAIRS = _pairs()
WITH_DATA = [(a, b) for a, b in _ring() if b.constant_symbols or "shared_memory_wrapper" in b.constructs]


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="session")
def plan_cache(tmp_path_factory):
    """One cache directory for the session, shared by all xdist workers (their base
    temporary directories are siblings): new plans, the originals compiled once."""
    root = tmp_path_factory.getbasetemp()
    return (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "realworld-plans"


def launch_of(kernel: M.RealKernel, cp, seed: int) -> KernelLaunch:
    made = kernel.make(np.random.default_rng(seed), cp, kernel.block)
    spec = replace(kernel.spec(), options=own_options(kernel))
    return KernelLaunch(spec, list(made.args), [Output(i) for i in made.outputs], grid=made.grid,
                        dynamic_smem=made.smem, symbols=dict(made.symbols), label=kernel.key)


def _id(pair) -> str:
    return f"{pair[0].key}+{pair[1].key}"


def launches_of(first: M.RealKernel, second: M.RealKernel, cp, seeds: tuple[int, int]) -> list[KernelLaunch]:
    """Two launches; kernels of one file share its ``__constant__`` tables, as they do
    natively (one module), so the second takes the first's data for the symbols both read."""
    a, b = launch_of(first, cp, seeds[0]), launch_of(second, cp, seeds[1])
    if first.file == second.file and set(a.symbols) & set(b.symbols):
        b = replace(b, symbols={**b.symbols, **{k: v for k, v in a.symbols.items() if k in b.symbols}})
    return [a, b]


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_pair_verifies_bit_for_bit_through_tune(cp, pair, plan_cache):
    first, second = pair
    launches = launches_of(first, second, cp, (1, 2))
    plan = tune(launches, SETTINGS, options=request_options(first, second), cache_dir=plan_cache,
                progress=False)
    wrong = [(r.label, r.error) for r in plan.candidates
             if r.error and ("differ" in r.error or "compile failed" in r.error or "launch" in r.error)]
    assert not wrong, wrong
    horizontal = [r for r in plan.candidates if r.candidate.layout == HORIZONTAL]
    assert horizontal and all(r.verified for r in horizontal), [(r.label, r.error) for r in horizontal]
    assert plan.decision == "fuse"


def _unfused_outputs(kernel: M.RealKernel, launch: KernelLaunch, compiler: Compiler) -> list[np.ndarray]:
    alone = device_source(launch.kernel, options=own_options(kernel))
    launch = replace(launch, source=alone.source, kernel=replace(launch.kernel, name=alone.qualified_name))
    return run_once(prepare(launch, compiler))


@pytest.mark.parametrize("pair", WITH_DATA, ids=_id)
def test_plan_launcher_runs_with_constant_data(cp, pair, plan_cache):
    first, second = pair
    plan = tune(launches_of(first, second, cp, (1, 2)), SETTINGS,
                options=request_options(first, second), cache_dir=plan_cache, progress=False)
    fused = launches_of(first, second, cp, (5, 6))  # new inputs and new tables
    run = launcher_for(plan, symbols=[fused[0].symbols or None, fused[1].symbols or None])
    run([fused[0].args, fused[1].args])
    cp.cuda.Device().synchronize()
    compiler = Compiler()
    again = launches_of(first, second, cp, (5, 6))  # the same inputs, for the unfused kernels
    for kernel, launch, unfused in ((first, fused[0], again[0]), (second, fused[1], again[1])):
        expected = _unfused_outputs(kernel, unfused, compiler)
        got = [cp.asnumpy(launch.args[o.index]) for o in launch.outputs]
        for e, g in zip(expected, got):
            assert e.tobytes() == g.tobytes(), f"{kernel.key}: fused output differs from the unfused kernel"
