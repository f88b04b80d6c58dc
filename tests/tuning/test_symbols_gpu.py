"""``__constant__``/``__device__`` data on a GPU: the originals read their tables, two
kernels with a table of one name fuse (each part its own, renamed by the front end), every
candidate verifies bit for bit against the unfused kernels through ``hfuse.tune``, and
``launcher_for(plan)`` runs with the data, and with new data on a later call."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hfuse
from hfuse.launch import KernelLaunch, Output
from hfuse.runtime.compile import Compiler
from hfuse.runtime.execute import prepare, run_once
from hfuse.runtime.symbols import SymbolError
from hfuse.spec import Dim3, KernelSpec
from hfuse.tuning.plan import load_plan
from hfuse.tuning.tuner import TuneSettings, tune

from .symbol_kernels import MIXER_CU, SCALE_CU, mixer_reference, scale_reference, tables
from hfuse.tuning.launcher import launcher_for
from hfuse.tuning.report import plan_table

pytestmark = pytest.mark.gpu

# Correctness, not speed: min_gain=-100 makes the plan fuse with whichever candidate is fastest.
SETTINGS = TuneSettings(granularity=128, neighbour_caps=False, refine=False, warmup_ms=2, rep_ms=5, min_gain=-100.0)
N = 1 << 20


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _grid(cp) -> Dim3:
    return Dim3(cp.cuda.Device().attributes["MultiProcessorCount"] * 4)


def scale_launch(cp, symbols, seed=1, label=""):
    x = np.random.default_rng(seed).integers(0, 1 << 32, N, dtype=np.uint32)
    spec = KernelSpec(Path("scale.cu"), "scale", 256, tunable=True)
    return KernelLaunch(spec, [cp.asarray(x), cp.zeros(N, cp.uint32), np.int64(N)], [Output(1)], grid=_grid(cp),
                        grid_free=True, source=SCALE_CU, symbols=symbols, label=label), x


def mixer_launch(cp, symbols, seed=2):
    s = np.random.default_rng(seed).integers(0, 1 << 32, N, dtype=np.uint32)
    spec = KernelSpec(Path("mixer.cu"), "mixer", 256, tunable=True)
    return KernelLaunch(spec, [cp.asarray(s), cp.zeros(N, cp.uint32), np.int64(N)], [Output(1)], grid=_grid(cp),
                        grid_free=True, source=MIXER_CU, symbols=symbols), s


def test_originals_read_their_tables(cp):
    a, b = tables(3)
    other, _ = tables(4)
    compiler = Compiler()
    # the same source twice with different tables: each launch gets a module of its own
    s1, x1 = scale_launch(cp, a, seed=5, label="s1")
    s2, x2 = scale_launch(cp, {"coeffs": cp.asarray(other["coeffs"])}, seed=5, label="s2")  # data on the GPU
    m, s = mixer_launch(cp, b)
    p1, p2, pm = prepare(s1, compiler), prepare(s2, compiler), prepare(m, compiler)
    assert p1.kernel is not p2.kernel and p1.kernel.binary.key == p2.kernel.binary.key
    got1, got2, gotm = run_once(p1)[0], run_once(p2)[0], run_once(pm)[0]
    assert np.array_equal(got1, scale_reference(x1, a))
    assert np.array_equal(got2, scale_reference(x2, other))
    assert np.array_equal(gotm, mixer_reference(s, b))
    # a later prepare of the first launch still sees its own table
    assert np.array_equal(run_once(prepare(s1, compiler))[0], scale_reference(x1, a))


def test_wrong_symbol_data_is_a_clear_error(cp):
    compiler = Compiler()
    short, _ = scale_launch(cp, {"coeffs": np.zeros(15, np.uint32)})
    with pytest.raises(SymbolError, match="'coeffs' is 64 bytes, but its data is 60 bytes"):
        prepare(short, compiler)
    unknown, _ = scale_launch(cp, {"coefs": np.zeros(16, np.uint32)})
    with pytest.raises(SymbolError, match="'coefs'.*no __constant__ or __device__ variable"):
        prepare(unknown, compiler)
    unqualified, _ = mixer_launch(cp, {"table": np.zeros(64, np.uint32)})
    with pytest.raises(SymbolError, match="'table'"):
        prepare(unqualified, compiler)


def test_tables_of_one_name_fuse_verify_and_launch(cp, tmp_path):
    specs = [KernelSpec(Path("scale.cu"), "scale", 256), KernelSpec(Path("mixer.cu"), "mixer", 256)]
    fused = hfuse.fuse(specs, sources={"scale.cu": SCALE_CU, "mixer.cu": MIXER_CU})
    renamed = [m.get("coeffs") for m in fused.symbol_names]
    assert all(renamed) and renamed[0] != renamed[1]  # each part reads its own table

    a, b = tables(10)
    s, x = scale_launch(cp, a)
    m, seeds = mixer_launch(cp, b)
    initial = [cp.asnumpy(s.args[1]), cp.asnumpy(m.args[1])]
    plan = tune([s, m], SETTINGS, cache_dir=tmp_path, progress=False, use_cache=False)
    print(plan_table(plan))
    assert plan.decision == "fuse", plan.reason
    # every candidate (horizontal, naive, vertical) matched the unfused kernels bit for bit
    assert plan.candidates and all(r.verified and r.error is None for r in plan.candidates), \
        [(r.label, r.error) for r in plan.candidates if not r.verified]
    # the kernels ran in a worker process, on copies: the caller's outputs are as they were
    assert np.array_equal(cp.asnumpy(s.args[1]), initial[0]) and np.array_equal(cp.asnumpy(m.args[1]), initial[1])
    assert plan.symbols == [{"coeffs": {"dtype": "uint32", "shape": [16], "bytes": 64}},
                            {"coeffs": {"dtype": "uint32", "shape": [16], "bytes": 64},
                             "lut::table": {"dtype": "uint32", "shape": [64], "bytes": 256},
                             "mix::salt": {"dtype": "uint32", "shape": [4], "bytes": 16}}]
    assert plan.symbol_names == [dict(n) for n in fused.symbol_names]

    # the plan launches, from its JSON, with the data; and with new data on a later call
    plan = load_plan(plan.save(tmp_path / "plan.json"))
    with pytest.raises(SymbolError, match="tuned with data"):
        launcher_for(plan)([s.args, m.args])
    # the fused kernel reads the right tables: its outputs are the NumPy results
    launcher_for(plan, symbols=[a, b])([s.args, m.args])
    cp.cuda.Device().synchronize()
    assert np.array_equal(cp.asnumpy(s.args[1]), scale_reference(x, a))
    assert np.array_equal(cp.asnumpy(m.args[1]), mixer_reference(seeds, b))
    a2, b2 = tables(11)
    s2, x2 = scale_launch(cp, a2, seed=12)
    m2, seeds2 = mixer_launch(cp, b2, seed=13)
    run = launcher_for(plan, symbols=[a2, b2])
    run([s2.args, m2.args])
    cp.cuda.Device().synchronize()
    assert np.array_equal(cp.asnumpy(s2.args[1]), scale_reference(x2, a2))
    assert np.array_equal(cp.asnumpy(m2.args[1]), mixer_reference(seeds2, b2))
    a3, b3 = tables(14)
    b3 = {"lut::table": b3["lut::table"]}  # only one table changes; the others keep b2's data
    run([s2.args, m2.args], symbols=[a3, b3])
    cp.cuda.Device().synchronize()
    assert np.array_equal(cp.asnumpy(s2.args[1]), scale_reference(x2, a3))
    assert np.array_equal(cp.asnumpy(m2.args[1]), mixer_reference(seeds2, {**b2, **b3}))
