"""Planted faults on a GPU: a candidate that deadlocks on a barrier is stopped and recorded
as ``timeout``, one that writes out of bounds as ``crashed``, and the tuner goes on to a
plan made of the candidates that verified."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from hfuse.layouts import HORIZONTAL
from hfuse.tuning import tuner as tuner_module
from hfuse.tuning.tuner import TuneSettings, tune

from .test_tuner_gpu import cp, gather_launch, hashloop_launch  # noqa: F401  (cp is a fixture)
from hfuse.tuning.report import plan_table

pytestmark = pytest.mark.gpu

LOOP_BODY = "unsigned j = start[i];"
# Warp 0 of the fused block (the gather part) waits at a named barrier for 64 threads;
# no other warp ever arrives: the block, so the kernel, never finishes.
DEADLOCK = 'if (threadIdx.x < 32) asm volatile("bar.sync 15, 64;");'
# One thread writes 4 TiB past the output: an illegal address, which ends the context.
OUT_OF_BOUNDS = "if (i == 0) *(volatile float*)(out + (1ll << 40)) = 0.f;"


def planted(real_fuse):
    def fuse(specs, **kwargs):
        fused = real_fuse(specs, **kwargs)
        if kwargs.get("layout", HORIZONTAL) != HORIZONTAL:
            return fused
        plant = {128: DEADLOCK, 384: OUT_OF_BOUNDS}.get(specs[0].block.size)
        if plant is None:
            return fused
        assert LOOP_BODY in fused.source
        return replace(fused, source=fused.source.replace(LOOP_BODY, plant + " " + LOOP_BODY))
    return fuse


def test_a_deadlock_and_a_fault_are_recorded_and_the_search_goes_on(cp, tmp_path, monkeypatch):
    monkeypatch.setattr(tuner_module, "fuse", planted(tuner_module.fuse))
    settings = TuneSettings(granularity=128, caps=False, refine=False, balance_grids=False, warmup_ms=5, rep_ms=20,
                            time_limit_floor_s=2.0)
    plan = tune([gather_launch(cp, n=1 << 20), hashloop_launch(cp, n=1 << 19)], settings, cache_dir=tmp_path,
                progress=False, use_cache=False)
    print(plan_table(plan))
    by_gather = {}
    for r in plan.candidates:
        if r.candidate.layout == HORIZONTAL:
            by_gather.setdefault(r.candidate.blocks[0].size, []).append(r)
    hung, faulted = by_gather.pop(128), by_gather.pop(384)
    assert hung and all(r.failure == "timeout" and r.time is None for r in hung), [(r.label, r.error) for r in hung]
    assert faulted and all(r.failure == "crashed" and r.time is None for r in faulted)
    assert any("illegal" in (r.error or "").lower() for r in faulted), [r.error for r in faulted]
    rest = [r for rs in by_gather.values() for r in rs]
    assert rest and all(r.verified and r.time is not None for r in rest), [(r.label, r.error) for r in rest]
    assert plan.chosen not in {r.label for r in hung + faulted}
    # this process's context is untouched: it still runs kernels
    x = cp.arange(1024, dtype=cp.float32)
    assert float((x * 2).sum()) == 1023 * 1024
    assert workers_of_this_process() == []  # none left holding the GPU


def workers_of_this_process() -> list[int]:
    """Worker processes still alive that were started for this process (it passes its pid)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"hfuse.tuning.worker" in words and str(os.getpid()).encode() in words:
            found.append(int(entry.name))
    return found


def test_the_worker_carries_views_of_one_buffer_as_one_buffer(cp):
    from hfuse.runtime.transfer import load_image, save_image

    base = cp.arange(1000, dtype=cp.int32)
    views = [base, base[10:20], base[::-3], cp.arange(5, dtype=cp.float64)]
    image = save_image(views)
    try:
        assert len(image.regions) == 2  # the three views of ``base`` share one range
        again = load_image(image)
        for old, new in zip(views, again):
            assert new.dtype == old.dtype and new.shape == old.shape
            assert (cp.asnumpy(new) == cp.asnumpy(old)).all()
        again[0][15] = -7  # a write through one view is seen through the other
        assert int(again[1][5]) == -7
    finally:
        image.remove()
