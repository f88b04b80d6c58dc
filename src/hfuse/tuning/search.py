"""The search schedule as data: the stages the tuner runs, each proposing candidates from
what is known so far.

1. ``first``: every layout's proposals, under register policies where they ask for them
   (``candidates.enumerate_candidates``);
2. ``around the best``: around the fastest verified candidate of the first set whose
   layout is searched around (``Layout.refined_around``): that layout's neighbours of its
   blocks and, where parts share a block and some kernel is grid-free, grids sized so the
   parts finish together, alone and under each register policy verified at its blocks;
3. ``other mixes``: the dispatch ratios and persistent mixes next to the fastest of their
   kind (``Layout.variants``), where that kind comes within 5% of the fastest of all.

A stage is a value; the tuner runs ``SCHEDULE`` in order, measuring what each proposes
that was not measured before. A new stage is one function and one entry here.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from ..launch import KernelLaunch
from ..runtime.device import DeviceLimits
from ..spec import KernelSpec
from ..fusion import Fusion
from ..layouts import Proposal
from .candidates import (SEARCHED, Candidate, balance_grids, enumerate_candidates, refine_around, resident_cap,
                         with_grids)
from .decision import fastest_verified
from .plan import CandidateResult


@dataclass(frozen=True)
class SearchState:
    """What a stage may look at."""

    specs: tuple[KernelSpec, ...]
    launches: tuple[KernelLaunch, ...]
    settings: Any
    """``TuneSettings`` (typed loosely: the tuner module imports this one)."""
    limits: DeviceLimits
    kernel_registers: tuple[int, ...]
    """Registers of each original kernel."""
    fused_smem: int
    """The fused block's shared memory: the originals' static plus their launches' dynamic."""
    alone_ms: tuple[float, ...]
    """Each original kernel's median time alone."""
    whole_blocks: bool = False
    """Some kernel must run as one whole block of its own: only layouts that keep a block
    whole are searched (``PreparedUnit.needs_whole_blocks``)."""
    results: tuple[CandidateResult, ...] = ()
    """Every candidate measured so far, in order."""


@dataclass(frozen=True)
class Stage:
    name: str
    propose: Callable[[SearchState], Sequence[Candidate]]


def first_set(state: SearchState) -> list[Candidate]:
    s = state.settings
    layouts = tuple(l for l in SEARCHED if l.keeps_block_whole) if state.whole_blocks else SEARCHED
    if s.layouts is not None:  # the layouts the request allows
        layouts = tuple(l for l in layouts if l.name in s.layouts)
    return enumerate_candidates(
        state.specs, limits=state.limits, kernel_registers=state.kernel_registers, fused_smem=state.fused_smem,
        fused_threads=s.fused_threads, granularity=s.granularity, caps=s.caps, neighbours=s.neighbour_caps,
        warpgroup_registers=s.warpgroup_registers, layouts=layouts,
    )


def around_the_best(state: SearchState) -> list[Candidate]:
    s, results = state.settings, state.results
    best_result = fastest_verified([r for r in results if r.candidate.layout.refined_around])
    if best_result is None:
        return []
    best = best_result.candidate
    out: list[Candidate] = []
    if s.refine:
        out += refine_around(best, state.specs)
    grid_free = [l.grid_free for l in state.launches]
    if s.balance_grids and best.layout.balances_grids and any(grid_free):
        grids = balance_grids(state.alone_ms, [l.grid_for(b) for l, b in zip(state.launches, best.blocks)],
                              best.blocks, grid_free)
        if any(g is not None for g in grids):
            out.append(with_grids(best, grids))
            out += [with_grids(Candidate(replace(best.fusion, registers=r.candidate.register_cap)), grids)
                    for r in results if r.verified and r.candidate.blocks == best.blocks
                    and r.candidate.register_cap != best.register_cap and r.candidate.layout == best.layout]
    return out


NEAR_THE_BEST = 1.05
"""A layout kind is refined (its ratios, its mixes) when its best is within 5% of the best of all."""


def other_mixes(state: SearchState) -> list[Candidate]:
    """Dispatch ratios and persistent mixes one step from the fastest of their kind, where
    that kind is near the fastest of all; a persistent mix the registers would not keep
    resident is also tried under the cap that does."""
    overall = fastest_verified(state.results)
    if overall is None:
        return []
    out: list[Candidate] = []
    for kind in dict.fromkeys(r.candidate.layout.name for r in state.results):
        best = fastest_verified([r for r in state.results if r.candidate.layout.name == kind])
        if best is None or best.time_ms > overall.time_ms * NEAR_THE_BEST:
            continue
        fusion = best.candidate.fusion
        for layout in fusion.layout.variants(len(fusion.blocks), fusion.fused_threads):
            proposal = Proposal(layout, fusion.blocks)
            out.append(Candidate(Fusion(fusion.blocks, layout)))
            if (cap := resident_cap(proposal, state.limits, state.kernel_registers)) is not None:
                out.append(Candidate(Fusion(fusion.blocks, layout, cap)))
    return out


SCHEDULE: tuple[Stage, ...] = (Stage("first", first_set), Stage("around the best", around_the_best),
                               Stage("other mixes", other_mixes))
