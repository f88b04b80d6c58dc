"""Symbols in plans, on the CPU: the JSON round trip, the cache key, and the plan
launcher's bookkeeping (which data goes where, when, and what is missing) with NVRTC
compiling for real and the loading/copying faked."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hfuse
from hfuse.errors import HFuseError
from hfuse.launch import KernelLaunch, Output
from hfuse.runtime.symbols import SymbolError
from hfuse.spec import Dim3, KernelSpec
from hfuse.tuning.cache import cache_key, describe_launch
from hfuse.tuning.launcher import FusedLauncher, PlanSymbols
from hfuse.tuning.plan import Plan

from . import symbol_kernels
from .symbol_kernels import MIXER_CU, SCALE_CU
from hfuse.tuning.launcher import launcher_for


def symbol_plan(fused=None) -> Plan:
    return Plan(
        kernels=["scale", "mixer"], decision="fuse", reason="test", blocks=[Dim3(128), Dim3(128)],
        fused_block=Dim3(256), grid=Dim3(8), grids=[Dim3(8), Dim3(4)], smems=[0, 0],
        fused_name=fused.name_expression if fused else "scale_mixer__hfused",
        fused_source=fused.source if fused else "",
        symbols=[{"coeffs": {"dtype": "uint32", "shape": [16], "bytes": 64}},
                 {"coeffs": {"dtype": "uint32", "shape": [16], "bytes": 64},
                  "lut::table": {"dtype": "uint32", "shape": [64], "bytes": 256}}],
        symbol_names=[dict(m) for m in fused.symbol_names] if fused else
        [{"coeffs": "coeffs__hf1"}, {"coeffs": "coeffs__hf2"}],
    )


def test_plan_round_trip_keeps_symbol_names_and_sizes_not_data():
    plan = symbol_plan()
    data = plan.to_dict()
    assert data["symbols"][1]["lut::table"] == {"dtype": "uint32", "shape": [64], "bytes": 256}
    assert data["symbol_names"] == [{"coeffs": "coeffs__hf1"}, {"coeffs": "coeffs__hf2"}]
    assert Plan.from_json(plan.to_json()) == plan


def test_a_plan_without_symbols_loads_as_before():
    data = Plan(kernels=["a", "b"], decision="do_not_fuse", reason="r").to_dict()
    del data["symbols"], data["symbol_names"]  # a plan written before symbols existed
    plan = Plan.from_dict(data)
    assert plan.symbols == [] and plan.symbol_names == []


def _launch(symbols, name="k"):
    class FakeArray:
        def __init__(self, shape, dt):
            self.shape, self.dtype = shape, np.dtype(dt)

    return KernelLaunch(KernelSpec(Path(f"{name}.cu"), name, 128), [FakeArray((64,), np.float32), np.int32(64)],
                        [Output(0)], grid=Dim3(4), source="src", symbols=symbols)


def _key(launch):
    return cache_key(gpu="H100", toolkit="sm_90 nvrtc 13.0", sources=["src"], launches=[describe_launch(launch)])


def test_cache_key_has_symbol_names_dtypes_and_shapes_not_contents():
    a = np.arange(16, dtype=np.float32)
    d = describe_launch(_launch({"coeffs": a, "ns::t": b"\0" * 8}))
    assert d["symbols"] == [["coeffs", "float32", [16]], ["ns::t", "bytes", [8]]]
    assert "symbols" not in describe_launch(_launch({}))  # keys of launches without symbols are unchanged
    base = _key(_launch({"coeffs": a}))
    assert _key(_launch({"coeffs": a + 1})) == base  # contents: same key
    assert len({base, _key(_launch({})), _key(_launch({"coeffs": np.arange(8, dtype=np.float32)})),
                _key(_launch({"coeffs": a.astype(np.int32)})), _key(_launch({"other": a})),
                _key(_launch({"coeffs": a.reshape(4, 4)}))}) == 6


@pytest.fixture(scope="module")
def fused():
    return hfuse.fuse([KernelSpec(Path("a.cu"), "scale", 128), KernelSpec(Path("b.cu"), "mixer", 128)],
                      sources={"a.cu": SCALE_CU, "b.cu": MIXER_CU})


def tables(seed=0):
    a, b = symbol_kernels.tables(seed)
    del b["mix::salt"]
    return a, b


def test_plan_symbols_merge_check_and_map(fused):
    plan = symbol_plan(fused)
    held = PlanSymbols(plan)
    a, b = tables()
    with pytest.raises(SymbolError, match="tuned with data for 'coeffs' \\(64 bytes\\)"):
        held.fused()
    with pytest.raises(HFuseError, match="one mapping \\(or None\\) per kernel, 2 in all"):
        held.update([a])
    with pytest.raises(HFuseError, match="one mapping"):
        held.update(a)
    with pytest.raises(SymbolError, match="no __constant__ or __device__ variable 'lut::tabel'"):
        held.update([a, {"lut::tabel": np.zeros(64, np.uint32)}])
    assert held.given == [{}, {}]  # a refused update changes nothing
    assert held.update([a, None]) is True
    with pytest.raises(SymbolError, match="kernel 'mixer'"):
        held.fused()  # mixer's tables are still missing
    held.update([None, b])
    data = held.fused()
    renames = fused.symbol_names
    assert data == {renames[0]["coeffs"]: a["coeffs"], renames[1]["coeffs"]: b["coeffs"],
                    "lut::table": b["lut::table"]}
    # later data replaces earlier data for that symbol only
    new = np.zeros(64, np.uint32)
    held.update([None, {"lut::table": new}])
    assert held.fused()["lut::table"] is new and held.fused()[renames[1]["coeffs"]] is b["coeffs"]
    # expressions are compiled for what is tuned, given or renamed (mix::salt is none of these)
    names = PlanSymbols(plan).names()
    assert set(names) == {renames[0]["coeffs"], renames[1]["coeffs"], "lut::table"}


def test_launcher_copies_before_the_first_launch_and_on_new_data(fused, cpu_compiler):
    plan = symbol_plan(fused)
    a, b = tables(1)
    run = launcher_for(plan, cpu_compiler, symbols=[a, b])
    binary = run._binary
    assert {"&lut::table", f"&{fused.symbol_names[0]['coeffs']}"} <= set(binary.lowered)
    ev = cpu_compiler.events
    assert ev == [("load", ev[0][1])] and ev[0][1].startswith("launcher")  # its own module, nothing copied yet
    args = [[object()] * 3, [object()] * 3]
    run(args)
    run(args)
    sets = [e for e in ev if e[0] == "set"]
    assert len(sets) == 1 and set(sets[0][2]) == {fused.symbol_names[0]["coeffs"], fused.symbol_names[1]["coeffs"],
                                                  "lut::table"}
    assert [e[0] for e in ev] == ["load", "set", "launch", "launch"]
    new = np.arange(64, dtype=np.uint32)
    run(args, symbols=[None, {"lut::table": new}])
    assert ev[-2][0] == "set" and ev[-2][2]["lut::table"] == new.tobytes() and ev[-1][0] == "launch"
    assert len({e[1] for e in ev}) == 1  # one module throughout


def test_launcher_without_data_for_tuned_symbols_refuses_to_launch(fused, cpu_compiler):
    run = FusedLauncher(symbol_plan(fused), cpu_compiler)
    with pytest.raises(SymbolError, match="tuned with data"):
        run([[object()] * 3, [object()] * 3])
    assert not any(e[0] == "launch" for e in cpu_compiler.events)
    a, b = tables(2)
    run([[object()] * 3, [object()] * 3], symbols=[a, b])
    assert [e[0] for e in cpu_compiler.events][-2:] == ["set", "launch"]


def test_launcher_of_a_plan_without_symbols_shares_the_plain_module(fused, cpu_compiler):
    plan = symbol_plan(fused)
    plan.symbols, plan.symbol_names = [], []
    run = FusedLauncher(plan, cpu_compiler)
    run([[object()] * 3, [object()] * 3])
    assert cpu_compiler.events == [("load", ""), ("launch", "", 6 + 8)]
