"""Whether to fuse: the fastest verified fusion against the fastest unfused way.

The reference is not one unfused way but the best of those measured: the kernels one
after another on one stream, on two streams, as a CUDA graph with parallel branches, or
on two streams with grid-stride kernels cut to k blocks per SM (``coresident``).
On some pairs two streams are slower than serial (0.979 ms against 0.841 ms on a pair of
third-party kernels): compared with two streams alone, a fusion no better than serial
would be chosen. A fusion is chosen only when it beats the reference by more than
``min_gain`` (timing noise).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .plan import Baselines, CandidateResult, Decision

WAY_TEXT = {"serial": "one after another on one stream", "two_streams": "on two streams",
            "graph": "as a CUDA graph with parallel branches",
            "co_resident": "on two streams with grids cut so that both stay resident"}


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    best: CandidateResult | None
    """The fastest verified candidate (None when none verified)."""
    speedup: float | None
    """The reference's time over the best candidate's."""


def fastest_verified(results: Sequence[CandidateResult]) -> CandidateResult | None:
    """The fastest candidate that was verified and timed, whatever its layout (horizontal,
    vertical or inter-block: on some pairs vertical fusion beats every horizontal split)."""
    timed = [r for r in results if r.verified and r.time is not None]
    return min(timed, key=lambda r: r.time.median_ms) if timed else None


def decide(results: Sequence[CandidateResult], baselines: Baselines, min_gain: float) -> Verdict:
    best = fastest_verified(results)
    if best is None:
        return Verdict("do_not_fuse", "no candidate compiled, ran and matched the unfused outputs", None, None)
    ways = baselines.ways()
    if not ways:
        return Verdict("do_not_fuse", "no unfused way was measured to compare with", best, None)
    way = baselines.fastest_way()
    reference = ways[way].median_ms
    fused = best.time.median_ms
    speedup = reference / fused
    if fused >= reference * (1.0 - min_gain):
        return Verdict("do_not_fuse", (
            f"the fastest verified fusion ({best.label}, {fused:.3f} ms) does not beat the fastest unfused way, the "
            f"kernels {WAY_TEXT[way]} ({reference:.3f} ms), by more than {min_gain:.0%}"), best, speedup)
    return Verdict("fuse", (f"{best.label} runs in {fused:.3f} ms vs {reference:.3f} ms for the kernels {WAY_TEXT[way]}, "
                            f"the fastest unfused way ({speedup:.2f}x)"), best, speedup)
