"""The decision compares the fastest verified fusion with the fastest unfused way measured
(serial, two streams or a graph), not with two streams alone."""
from __future__ import annotations

from hfuse.layouts import VERTICAL, layout_of
from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.decision import decide, fastest_verified
from hfuse.tuning.plan import Baselines, CandidateResult


def _t(ms: float) -> Timing:
    return Timing.of([ms])


def result(label: str, ms: float | None, *, verified: bool = True, layout: str = "horizontal") -> CandidateResult:
    return CandidateResult(Candidate(Fusion((Dim3(128), Dim3(128)), layout_of(layout)), label),
                           time=_t(ms) if ms is not None else None, verified=verified)


RESULTS = [result("hfuse 128+128", 0.90), result("naive", 0.80, verified=False),
           result("vertical", 0.99, layout="vertical"), result("hfuse 96+160", 0.95)]


def test_only_verified_candidates_compete():
    assert fastest_verified(RESULTS).label == "hfuse 128+128"
    assert fastest_verified([result("naive", 0.8, verified=False)]) is None


def test_every_layout_competes():
    """Vertical fusion beat every horizontal split on a pair of third-party kernels (0.713 ms
    against 0.846 ms): the fastest verified layout is chosen, whichever it is."""
    faster = [*RESULTS, result("vertical", 0.713, layout="vertical"), result("interblock", 0.80, layout="interblock")]
    assert fastest_verified(faster).label == "vertical"
    verdict = decide(faster, Baselines(serial=_t(0.841), two_streams=_t(0.979)), min_gain=0.01)
    assert verdict.decision == "fuse" and verdict.best.candidate.layout == VERTICAL


def test_serial_faster_than_two_streams_is_the_reference():
    """0.90 ms fused beats two streams (0.98 ms) but not serial (0.84 ms): do not fuse."""
    verdict = decide(RESULTS, Baselines(serial=_t(0.84), two_streams=_t(0.98), graph=_t(0.97)), min_gain=0.01)
    assert verdict.decision == "do_not_fuse"
    assert "one after another on one stream (0.840 ms)" in verdict.reason
    assert abs(verdict.speedup - 0.84 / 0.90) < 1e-9


def test_fusion_that_beats_every_unfused_way_is_chosen():
    verdict = decide(RESULTS, Baselines(serial=_t(1.3), two_streams=_t(1.2), graph=_t(1.1)), min_gain=0.01)
    assert verdict.decision == "fuse" and verdict.best.label == "hfuse 128+128"
    assert "as a CUDA graph with parallel branches, the fastest unfused way (1.22x)" in verdict.reason


def test_a_gain_within_noise_is_declined():
    verdict = decide(RESULTS, Baselines(serial=_t(0.905), two_streams=_t(1.0), graph=_t(1.0)), min_gain=0.01)
    assert verdict.decision == "do_not_fuse" and "by more than 1%" in verdict.reason


def test_nothing_verified_is_declined_with_the_reason():
    verdict = decide([result("naive", 0.8, verified=False)], Baselines(two_streams=_t(1.0)), min_gain=0.01)
    assert verdict.decision == "do_not_fuse" and verdict.best is None and "no candidate" in verdict.reason
