"""Co-resident streams on a GPU: the tuner measures them for grid-stride kernels, and a
declined plan whose fastest unfused way they are launches the cut grids with the same
outputs as the full ones."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3
from hfuse.tuning.coresident import K_CHOICES
from hfuse.tuning.tuner import TuneSettings, tune

from .test_tuner_gpu import _sms, cp, gather_launch, hashloop_launch  # noqa: F401  (cp is a fixture)
from hfuse.tuning.launcher import launcher_for
from hfuse.tuning.report import plan_table

pytestmark = pytest.mark.gpu

SETTINGS = TuneSettings(granularity=128, caps=False, refine=False, balance_grids=False, warmup_ms=5, rep_ms=20)


def test_co_resident_streams_are_a_measured_baseline_and_a_way_to_launch(cp, tmp_path):
    plan = tune([gather_launch(cp, n=1 << 20), hashloop_launch(cp, n=1 << 19)], SETTINGS, cache_dir=tmp_path,
                progress=False, use_cache=False)
    print(plan_table(plan))
    base = plan.baselines
    assert base.co_resident is not None and base.co_resident_k in K_CHOICES
    assert [g.x for g in base.co_resident_grids] == [base.co_resident_k * _sms(cp)] * 2  # both grid-stride
    assert "co-resident streams" in plan_table(plan)

    def outputs(p):
        g, h = gather_launch(cp, n=1 << 20, seed=7), hashloop_launch(cp, n=1 << 19, seed=8)
        launcher_for(p)([g.args, h.args])
        cp.cuda.Device().synchronize()
        return [cp.asnumpy(g.args[2]), cp.asnumpy(h.args[1])]

    # the same plan declined, once with co-resident streams fastest and once with serial:
    # the originals at their own blocks, with the cut grids and with their full grids
    fastest = Timing.of([1e-6])
    declined = replace(plan, decision="do_not_fuse", fused_source="", blocks=[Dim3(256), Dim3(256)])
    co = replace(declined, grids=list(base.co_resident_grids), baselines=replace(base, co_resident=fastest))
    serial = replace(declined, grids=[Dim3(_sms(cp) * 8)] * 2, baselines=replace(base, co_resident=None, serial=fastest))
    assert co.unfused_way == "co_resident" and serial.unfused_way == "serial"
    for got, want in zip(outputs(co), outputs(serial)):
        assert np.array_equal(got, want)
