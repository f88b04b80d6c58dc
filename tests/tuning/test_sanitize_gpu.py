"""compute-sanitizer on fused kernels: every corpus fusion and every benchmark pair is
clean under memcheck, racecheck, synccheck and initcheck, or its findings are ones the
original kernels show too; a race or a fault planted in a fused kernel is found.

With ``HFUSE_SANITIZER_RESULTS=DIR`` each verdict is also written to ``DIR/<case>.json``
(``bench/results/h100/sanitizer/`` keeps a run's).
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hfuse.bench.pairs import PAIRS
from hfuse.launch import KernelLaunch, Output
from hfuse.runtime.sanitizer import TOOLS, verdict_of
from hfuse.tuning import tuner as tuner_module
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.tuner import sanitize_candidate

from corpus import cases as C  # tests/corpus/cases.py (tests/ is on sys.path via its conftest)

from .test_isolation_gpu import LOOP_BODY, OUT_OF_BOUNDS
from .test_tuner_gpu import cp, gather_launch, hashloop_launch  # noqa: F401  (cp is a fixture)

pytestmark = pytest.mark.gpu


def _save(case: str, launches: list[KernelLaunch], candidate: Candidate, results) -> None:
    directory = os.environ.get("HFUSE_SANITIZER_RESULTS")
    if not directory:
        return
    Path(directory).mkdir(parents=True, exist_ok=True)
    data = {"case": case, "kernels": [l.name for l in launches], "blocks": [str(b) for b in candidate.blocks],
            "strategy": candidate.layout.spec, "verdict": verdict_of(results), "tools": [r.to_dict() for r in results]}
    (Path(directory) / f"{case.replace('+', '_')}.json").write_text(json.dumps(data, indent=1))


def _assert_clean_or_explained(results) -> None:
    assert [r.tool for r in results] == list(TOOLS)
    assert verdict_of(results) in ("clean", "explained"), "\n".join(f"{r.tool}: {r.note}" for r in results)


def corpus_launches(cp, group: tuple[str, ...], blocks) -> list[KernelLaunch]:
    rng = np.random.default_rng(11)
    launches = []
    for key, block in zip(group, blocks):
        case = C.CASES[key]
        made = case.make(rng, cp, block)
        launches.append(KernelLaunch(case.spec(block), made.args, [Output(i) for i in made.outputs], grid=made.grid,
                                     dynamic_smem=made.smem, label=key))
    return launches


@pytest.mark.parametrize("group", C.GROUPS, ids=C.group_id)
def test_corpus_fusions_are_sanitizer_clean(cp, group):
    blocks = C.partitions(group)[0]
    launches = corpus_launches(cp, group, blocks)
    candidate = Candidate(Fusion(blocks))
    results = sanitize_candidate(launches, candidate)
    _save("corpus-" + C.group_id(group), launches, candidate, results)
    _assert_clean_or_explained(results)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.key)
def test_benchmark_pairs_are_sanitizer_clean(cp, pair):
    from hfuse.bench.workloads import registry

    work = registry()
    launches = [work[k].make(work[k].test_sizes[0], seed=3) for k in pair.kernels]
    candidate = Candidate(Fusion(tuple(l.kernel.block for l in launches)))
    assert candidate.fused_threads <= 1024
    results = sanitize_candidate(launches, candidate)
    _save("pair-" + pair.key, launches, candidate, results)
    _assert_clean_or_explained(results)


# every thread writes its own index to one shared word: a write-write race (volatile: kept)
RACE = "{ __shared__ volatile unsigned hf_planted; hf_planted = threadIdx.x; }"


def sanitize_planted(cp, monkeypatch, plant: str, tool):
    real_fuse = tuner_module.fuse

    def planted(specs, **kwargs):
        fused = real_fuse(specs, **kwargs)
        return replace(fused, source=fused.source.replace(LOOP_BODY, f"{plant} {LOOP_BODY}"))

    monkeypatch.setattr(tuner_module, "fuse", planted)
    launches = [gather_launch(cp, n=1 << 12), hashloop_launch(cp, n=1 << 12, rounds=10)]
    [result] = sanitize_candidate(launches, Candidate(Fusion((launches[0].kernel.block, launches[1].kernel.block))),
                                  tools=(tool,))
    return result


def test_a_planted_race_is_found_in_the_fused_kernel_only(cp, monkeypatch):
    race = sanitize_planted(cp, monkeypatch, RACE, "racecheck")
    assert race.verdict == "findings" and any("Race reported" in f.kind for f in race.fused), race.note
    assert not race.originals


def test_a_planted_out_of_bounds_write_is_found_in_the_fused_kernel_only(cp, monkeypatch):
    memory = sanitize_planted(cp, monkeypatch, OUT_OF_BOUNDS, "memcheck")
    assert memory.verdict == "findings" and any("Invalid __global__ write" in f.kind for f in memory.fused), memory.note
    assert not memory.originals
