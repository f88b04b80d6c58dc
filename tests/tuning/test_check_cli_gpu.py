"""``hfuse tune --sanitize`` and ``hfuse check`` from the command line, on a GPU."""
from __future__ import annotations

import json
import textwrap

import pytest

from hfuse.cli import main

from .test_tuner_gpu import GATHER, HASHLOOP

pytestmark = pytest.mark.gpu


def write_request(tmp_path):
    pytest.importorskip("cupy")
    (tmp_path / "inputs.py").write_text(textwrap.dedent(f'''
        import cupy as cp
        import numpy as np
        from pathlib import Path
        from hfuse import KernelLaunch, KernelSpec, Output
        from hfuse.spec import Dim3

        def make_launches():
            rng = cp.random.RandomState(5)
            n = 1 << 16
            table = rng.standard_normal(1 << 20, dtype=cp.float32)
            start = rng.randint(0, 1 << 30, size=n, dtype=cp.uint32)
            gather = KernelLaunch(KernelSpec(Path("gather.cu"), "gather", 256, tunable=True),
                                  [table, start, cp.zeros(n, dtype=cp.float32), np.int64(n), np.uint32((1 << 20) - 1)],
                                  [Output(2)], grid=Dim3(264), grid_free=True, source={GATHER!r})
            seeds = rng.randint(0, 1 << 31, size=n, dtype=cp.uint32)
            hashloop = KernelLaunch(KernelSpec(Path("hashloop.cu"), "hashloop", 256, tunable=True),
                                    [seeds, cp.zeros(n, dtype=cp.uint32), np.int64(n), np.int32(200)], [Output(1)],
                                    grid=Dim3(264), grid_free=True, source={HASHLOOP!r})
            return [gather, hashloop]
    '''))
    config = tmp_path / "pair.yaml"
    config.write_text("name: pair\nlaunches: inputs.py:make_launches\n"
                      "tune: {caps: false, refine: false, balance_grids: false, warmup_ms: 5, rep_ms: 20, min_gain: -1.0}\n")
    return config


def test_tune_sanitize_then_check_one_tool(tmp_path):
    config = write_request(tmp_path)
    out = tmp_path / "out"
    assert main(["tune", str(config), "-o", str(out), "--sanitize"]) == 0
    plan = json.loads((out / "pair-plan.json").read_text())
    assert plan["decision"] == "fuse"  # min_gain -1: whatever the times, a verified fusion is kept
    assert [r["tool"] for r in plan["sanitizer"]] == ["memcheck", "racecheck", "synccheck", "initcheck"]
    assert all(r["verdict"] == "clean" for r in plan["sanitizer"]), plan["sanitizer"]
    assert main(["check", str(config), "-o", str(out), "--tool", "memcheck"]) == 0
    again = json.loads((out / "pair-plan.json").read_text())
    assert [r["tool"] for r in again["sanitizer"]] == ["memcheck"]
    assert again["fused_source"] == plan["fused_source"]  # the plan is otherwise as it was
