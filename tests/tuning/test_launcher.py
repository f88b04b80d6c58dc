"""``launcher_for(plan)`` whatever the decision, on the CPU: a declined plan launches the
original kernels (compiled for real with NVRTC, loading and launching faked) with their
own shapes and symbol data; what it needs travels in the plan's JSON."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.errors import HFuseError
from hfuse.runtime.symbols import SymbolError
from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3
from hfuse.tuning.launcher import FusedLauncher, UnfusedLauncher, launcher_for
from hfuse.tuning.plan import Baselines, Plan

from .symbol_kernels import MIXER_CU, SCALE_CU, tables


def _t(ms: float) -> Timing:
    return Timing.of([ms])


def declined_plan(serial_ms: float = 1.0, streams_ms: float = 2.0, graph_ms: float = 3.0) -> Plan:
    return Plan(
        kernels=["scale", "mixer"], decision="do_not_fuse", reason="slower fused",
        blocks=[Dim3(128), Dim3(256)], grids=[Dim3(8), Dim3(4)], smems=[0, 64],
        baselines=Baselines(serial=_t(serial_ms), two_streams=_t(streams_ms), graph=_t(graph_ms)),
        unfused_sources=[SCALE_CU, MIXER_CU], unfused_names=["scale", "mixer"],
        symbols=[{"coeffs": {"dtype": "uint32", "shape": [16], "bytes": 64}},
                 {"coeffs": {"dtype": "uint32", "shape": [16], "bytes": 64},
                  "lut::table": {"dtype": "uint32", "shape": [64], "bytes": 256},
                  "mix::salt": {"dtype": "uint32", "shape": [4], "bytes": 16}}],
    )


def test_fastest_measured_way_is_the_unfused_way():
    assert declined_plan(1, 2, 3).unfused_way == "serial"
    assert declined_plan(3, 1, 2).unfused_way == "two_streams"
    assert declined_plan(3, 2, 1).unfused_way == "graph"
    assert Plan(kernels=["a", "b"], decision="do_not_fuse", reason="").unfused_way == "two_streams"  # none measured


def test_round_trip_keeps_what_the_unfused_launch_needs():
    plan = declined_plan()
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert again.unfused_sources == [SCALE_CU, MIXER_CU] and again.baselines.serial == plan.baselines.serial


def test_declined_plan_launches_the_originals_serially_with_their_shapes(cpu_compiler):
    plan = declined_plan()
    run = launcher_for(plan, cpu_compiler, symbols=list(tables(1)))
    assert isinstance(run, UnfusedLauncher)
    x, y = object(), object()  # stand-ins: the fake kernels record, never read them
    run([[x, y, np.int64(4)], [x, y, np.int64(4)]])
    events = cpu_compiler.events
    loads = [e for e in events if e[0] == "load"]
    assert len(loads) == 2 and loads[0][1] != loads[1][1]  # a module of its own each (symbol data)
    sets = [e for e in events if e[0] == "set"]
    assert [sorted(s[2]) for s in sets] == [["coeffs"], ["coeffs", "lut::table", "mix::salt"]]
    launches = [e for e in events if e[0] == "launch"]
    assert [e[1] for e in launches] == [loads[0][1], loads[1][1]] and [e[2] for e in launches] == [3, 3]


def test_missing_symbol_data_is_refused_before_any_launch(cpu_compiler):
    run = launcher_for(declined_plan(), cpu_compiler, symbols=[tables(1)[0], None])
    with pytest.raises(SymbolError, match="'coeffs', 'lut::table', 'mix::salt'"):
        run([[1], [2]])
    assert not any(e[0] == "launch" for e in cpu_compiler.events)


def test_data_for_a_kernel_tuned_without_any_is_refused(cpu_compiler):
    plan = declined_plan()
    plan.symbols = [{}, plan.symbols[1]]
    with pytest.raises(SymbolError, match="tuned without symbol data"):
        launcher_for(plan, cpu_compiler, symbols=[tables(1)[0], None])


def test_plan_of_an_older_hfuse_says_to_tune_again(cpu_compiler):
    plan = declined_plan()
    plan.unfused_sources = []
    with pytest.raises(HFuseError, match="tune again"):
        launcher_for(plan, cpu_compiler)


def test_fused_launcher_of_a_declined_plan_points_to_plan_launcher(cpu_compiler):
    with pytest.raises(HFuseError, match=r"hfuse.launcher\(plan\)"):
        FusedLauncher(declined_plan(), cpu_compiler)


def test_wrong_number_of_argument_lists(cpu_compiler):
    run = launcher_for(declined_plan(), cpu_compiler, symbols=list(tables(1)))
    with pytest.raises(HFuseError, match="2 kernels"):
        run([[1]])
