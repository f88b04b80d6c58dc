"""A fused kernel with per-part register budgets (``setmaxnreg``) on an H100: it loads with
the entry count its budgets assume and computes what the unfused kernels compute."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.runtime.compile import Compiler
from hfuse.runtime.execute import prepare
from hfuse.spec import Dim3
from hfuse.tuning.plan import Plan
from hfuse.registers import WarpgroupRegisters

from .test_tuner_gpu import cp, gather_launch, hashloop_launch  # noqa: F401  (cp is a fixture)
from .test_warpgroup_registers import fused_with
from hfuse.tuning.launcher import launcher_for

pytestmark = pytest.mark.gpu


def test_a_budgeted_fusion_launches_from_its_plan_and_matches_the_originals(cp):
    if cp.cuda.Device().compute_capability != "90":
        pytest.skip("setmaxnreg budgets are for sm_90a (Hopper)")
    policy = WarpgroupRegisters(2, (112, 48))
    fused = fused_with(policy)
    g, h = gather_launch(cp, n=1 << 20, seed=3).with_block(Dim3(128)), hashloop_launch(cp, n=1 << 19, seed=4).with_block(Dim3(384))
    plan = Plan(kernels=["gather", "hashloop"], decision="fuse", reason="test", blocks=[Dim3(128), Dim3(384)],
                register_cap=policy, fused_block=Dim3(512), grids=[g.grid_for(), h.grid_for()], smems=[0, 0],
                fused_name=fused.name_expression, fused_source=fused.source)
    run = launcher_for(plan)  # compiles for sm_90a
    assert run.kernel.resources.registers == policy.entry(512)  # the count the budgets add up to
    run([g.args, h.args])
    cp.cuda.Device().synchronize()
    got = [cp.asnumpy(g.args[2]), cp.asnumpy(h.args[1])]
    g2, h2 = gather_launch(cp, n=1 << 20, seed=3), hashloop_launch(cp, n=1 << 19, seed=4)
    compiler = Compiler()
    for launch, block in ((g2, Dim3(128)), (h2, Dim3(384))):
        prepare(launch.with_block(block), compiler)()
    cp.cuda.Device().synchronize()
    assert np.array_equal(got[0].view(np.uint32), cp.asnumpy(g2.args[2]).view(np.uint32))
    assert np.array_equal(got[1], cp.asnumpy(h2.args[1]))
