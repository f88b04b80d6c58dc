"""The search's third stage: ratios and mixes next to the fastest of their kind."""
from __future__ import annotations

from pathlib import Path

from hfuse.fusion import Fusion
from hfuse.layouts import layout_of
from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3, KernelSpec
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.plan import CandidateResult
from hfuse.tuning.search import SCHEDULE, SearchState, other_mixes
from hfuse.tuning.tuner import TuneSettings

H100 = DeviceLimits(name="H100", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536, regs_per_block=65536,
                    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=233472, smem_per_block_optin=232448)
BLOCKS = (Dim3(256), Dim3(256))


def result(layout: str, ms: float) -> CandidateResult:
    return CandidateResult(Candidate(Fusion(BLOCKS, layout_of(layout))), time=Timing.of([ms]), verified=True)


def state(results, registers=(32, 32)) -> SearchState:
    specs = (KernelSpec(Path("a.cu"), "a", 256), KernelSpec(Path("b.cu"), "b", 256))
    return SearchState(specs=specs, launches=(), settings=TuneSettings(), limits=H100, kernel_registers=registers,
                       fused_smem=0, alone_ms=(1.0, 1.0), results=tuple(results))


def test_the_stage_is_third_in_the_schedule():
    assert [s.name for s in SCHEDULE] == ["first", "around the best", "other mixes"]


def test_mixes_next_to_a_persistent_winner_are_tried():
    found = other_mixes(state([result("horizontal", 1.2), result("persistent:2:2", 1.0), result("dynamic", 1.3)]))
    assert [c.label for c in found] == ["persistent:3:2", "persistent:1:2", "persistent:2:3", "persistent:2:1"]


def test_a_kind_near_the_best_is_refined_too_and_one_far_from_it_is_not():
    near = other_mixes(state([result("persistent:2:2", 1.0), result("dynamic:2:1", 1.04), result("dynamic", 1.2)]))
    # (1:1, measured already, is skipped by the tuner, which measures nothing twice)
    assert [c.label for c in near][4:] == ["dynamic:3:1", "dynamic"]
    far = other_mixes(state([result("persistent:2:2", 1.0), result("dynamic:2:1", 1.2)]))
    assert all(c.layout.name == "persistent" for c in far)
    assert other_mixes(state([result("horizontal", 1.0), result("vertical", 1.01)])) == []  # no variants of those


def test_a_mix_the_registers_would_not_keep_resident_is_also_tried_capped():
    found = other_mixes(state([result("persistent:1:1", 1.0)], registers=(128, 32)))
    # 128 registers x 256 threads x 3 blocks exceed an SM's registers: 1:2 and 2:1 also under b3
    assert [c.label for c in found] == ["persistent:2:1", "persistent:2:1 cap=b3", "persistent:1:2",
                                        "persistent:1:2 cap=b3"]
