"""Launch one pair's kernels once each, for Nsight Compute (and time them, outside ncu).

    python -m hfuse.bench.profile_one --pair Hist+Maxpool --sizes hist=1000000000,maxpool=320 \
        [--plan PLAN.json] [--variants k1,k2,nocap,cap]

Variants:

- ``k1``, ``k2``: the original kernels with their own block and grid;
- ``nocap``: the horizontally fused kernel with the plan's partition (the tuner's choice,
  or its best horizontal candidate when it declined to fuse; the even split when no plan
  is given), no register cap;
- ``cap``: the same partition with a register cap: the chosen candidate's cap if it had
  one, else the paper's ``__launch_bounds__(D, b0)`` (``regcap.paper_cap``).

The fused variants get distinct kernel names (``<k1>_<k2>__hfused_nocap`` / ``_cap``) so
one ``ncu`` run can profile all four (``--kernel-name regex:...``). Under ncu the
program only builds the inputs, compiles, and launches each variant once; it writes
nothing to stdout (ncu's CSV goes there).
"""
from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..layouts import HORIZONTAL
from .pairs import KERNEL_FUNCTIONS, Pair, find_pair

VARIANTS = ("k1", "k2", "nocap", "cap")


def fused_names(pair: Pair) -> dict[str, str]:
    base = "_".join(KERNEL_FUNCTIONS[k] for k in pair.kernels) + "__hfused"
    return {"nocap": base + "_nocap", "cap": base + "_cap"}


def kernel_names(pair: Pair) -> dict[str, str]:
    """Variant -> the ``__global__`` function name ncu sees."""
    k1, k2 = pair.kernels
    return {"k1": KERNEL_FUNCTIONS[k1], "k2": KERNEL_FUNCTIONS[k2], **fused_names(pair)}


def parse_sizes(text: str) -> dict[str, int]:
    out = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, _, value = item.partition("=")
        out[key.strip().lower()] = int(float(value))
    return out


def format_sizes(sizes: dict[str, int]) -> str:
    return ",".join(f"{k}={int(v)}" for k, v in sizes.items())


@dataclass
class Partition:
    """The partition and grids the fused variants use, and where they came from."""

    blocks: tuple[Any, ...]
    grids: tuple[Any, ...] | None
    cap: Any
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks": [str(b) for b in self.blocks],
            "grids": None if self.grids is None else [None if g is None else str(g) for g in self.grids],
            "cap": self.cap.label if self.cap is not None else None,
            "source": self.source,
        }


def choose_partition(plan: Any, launches: Sequence[Any]) -> Partition:
    """The partition to profile: the plan's horizontal choice, else its best horizontal
    candidate, else (no plan, or nothing verified) the even split."""
    from ..layouts.partitions import even_split

    if plan is not None:
        if plan.decision == "fuse" and plan.layout == HORIZONTAL and plan.blocks:
            chosen = next((c for c in plan.candidates if c.candidate.label == plan.chosen), None)
            grids = chosen.candidate.grids if chosen is not None else (tuple(plan.grids) or None)
            return Partition(tuple(plan.blocks), grids, plan.register_cap, f"tuned choice ({plan.chosen})")
        timed = [c for c in plan.candidates
                 if c.candidate.layout == HORIZONTAL and c.verified and c.time_ms is not None]
        if timed:
            best = min(timed, key=lambda c: c.time_ms)
            return Partition(best.candidate.blocks, best.candidate.grids, best.candidate.register_cap,
                             f"best horizontal candidate ({best.candidate.label}); the tuner declined to fuse")
    split = even_split([l.kernel for l in launches])
    if split is None:
        raise ValueError("no partition: the plan has no verified horizontal candidate and there is no even split")
    return Partition(split, None, None, "even split (no plan with a verified horizontal candidate)")


@dataclass
class Variants:
    pair: Pair
    sizes: dict[str, int]
    partition: Partition
    launches: list[Any]
    prepared: dict[str, Any] = field(default_factory=dict)
    """Variant -> PreparedLaunch (k1, k2, nocap and, when a cap exists, cap)."""
    at_partition: list[Any] = field(default_factory=list)
    """The originals at the partition's block shapes (references for verification)."""
    info: dict[str, Any] = field(default_factory=dict)


def build_variants(pair: Pair, sizes: dict[str, int], plan: Any = None, *, with_references: bool = False) -> Variants:
    """Builds inputs, compiles the originals and both fused variants (fused in parallel)."""
    from ..api import fuse
    from ..runtime.compile import Compiler
    from ..runtime.device import DeviceLimits
    from ..runtime.execute import prepare, prepare_fused
    from ..registers import WarpgroupRegisters
    from ..tuning.regcap import paper_cap
    from .pairs import make_launches

    limits = DeviceLimits.current()
    compiler = Compiler(limits=limits)
    launches = make_launches(pair, sizes)
    part = choose_partition(plan, launches)
    names = kernel_names(pair)
    v = Variants(pair, dict(sizes), part, launches)
    v.prepared["k1"] = prepare(launches[0], compiler)
    v.prepared["k2"] = prepare(launches[1], compiler)

    moved = []
    for i, (l, b) in enumerate(zip(launches, part.blocks)):
        m = l.with_block(b)
        if part.grids is not None and part.grids[i] is not None:
            m = m.with_grid(part.grids[i])
        moved.append(m)
    specs = [m.kernel for m in moved]
    cap = part.cap
    if cap is None:
        regs = [v.prepared["k1"].kernel.resources.registers, v.prepared["k2"].kernel.resources.registers]
        static = sum(v.prepared[k].kernel.resources.static_smem for k in ("k1", "k2"))
        proposal = paper_cap(limits, [b.size for b in part.blocks], regs,
                             static + sum(m.smem_for() for m in moved))
        cap = proposal.cap if proposal is not None else None
        v.info["cap_source"] = "paper's b0" if cap is not None else "none (paper's b0 < 2)"
    else:
        v.info["cap_source"] = "the tuned candidate's cap"
    v.info["cap"] = cap.label if cap is not None else None

    wanted = {"nocap": None}
    if cap is not None:
        wanted["cap"] = cap

    budgets = Compiler(arch=limits.arch + "a", limits=limits)  # setmaxnreg needs the sm_90a target

    def build(variant: str) -> tuple[Any, Any]:
        fk = fuse(specs, layout=HORIZONTAL, register_cap=wanted[variant], name=names[variant])
        chosen = budgets if isinstance(wanted[variant], WarpgroupRegisters) else compiler
        return fk, chosen.compile(fk.source, [fk.name_expression])

    with futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {k: pool.submit(build, k) for k in wanted}
        for variant, job in jobs.items():
            fk, binary = job.result()
            kernel = compiler.load(binary, fk.name_expression)
            packed = fk.pack([m.args for m in moved], [m.grid_for() for m in moved], [m.smem_for() for m in moved])
            v.prepared[variant] = prepare_fused(kernel, packed, moved, name=names[variant])
    for variant, p in v.prepared.items():
        res = p.kernel.resources
        v.info.setdefault("kernels", {})[variant] = {
            "name": names[variant], "registers": res.registers, "local_bytes": res.local_bytes,
            "static_smem": res.static_smem, "block": str(p.block), "grid": str(p.grid), "dynamic_smem": p.shared_mem,
        }
    if with_references:
        v.at_partition = [prepare(l.with_block(m.kernel.block), compiler) for l, m in zip(launches, moved)]
    return v


def verify_and_time(v: Variants, *, warmup_ms: float = 25.0, rep_ms: float = 100.0) -> dict[str, Any]:
    """Checks each fused variant against the originals (at the partition's block shapes),
    then times native (two streams), each original alone and each fused variant."""
    from ..runtime.execute import OutputSnapshot, compare_outputs, run_once
    from ..runtime.timing import ConcurrentLaunches, Timer

    out: dict[str, Any] = {"verified": {}, "errors": {}}
    arrays = [a for l in v.launches for a in (l.args[o.index] for o in l.outputs)]
    snapshot = OutputSnapshot(arrays)
    refs = v.at_partition or [v.prepared["k1"], v.prepared["k2"]]
    expected = [o for p in refs for o in run_once(p, snapshot)]
    for variant in ("nocap", "cap"):
        if variant not in v.prepared:
            continue
        p = v.prepared[variant]
        problems = compare_outputs(expected, run_once(p, snapshot), p.compared)
        out["verified"][variant] = not problems
        if problems:
            out["errors"][variant] = "; ".join(problems[:3])
    timer = Timer()
    pair_launch = ConcurrentLaunches([v.prepared["k1"], v.prepared["k2"]])
    out["native_ms"] = timer.time(lambda: pair_launch(), warmup_ms=warmup_ms, rep_ms=rep_ms).median_ms
    for variant, p in v.prepared.items():
        if variant in ("nocap", "cap") and not out["verified"].get(variant):
            continue
        out[f"{variant}_ms"] = timer.time(lambda p=p: p(), warmup_ms=warmup_ms, rep_ms=rep_ms).median_ms
    snapshot.restore()
    return out


def launch_once(v: Variants, variants: Sequence[str]) -> list[str]:
    """Launches each requested variant once, in order; returns those launched."""
    from ..runtime.device import require_gpu

    cupy = require_gpu()
    done = []
    for variant in variants:
        if variant in v.prepared:
            v.prepared[variant]()
            cupy.cuda.get_current_stream().synchronize()
            done.append(variant)
    return done


def load_plan_file(path: str | Path | None) -> Any:
    if not path:
        return None
    from ..tuning.plan import load_plan

    return load_plan(path)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hfuse.bench.profile_one", description=__doc__.splitlines()[0])
    ap.add_argument("--pair", required=True)
    ap.add_argument("--sizes", required=True, help="workload=size,workload=size")
    ap.add_argument("--plan", help="the tuner's plan for this pair and size (plans/*.json)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--info", help="write what was launched (names, registers, partition) to this JSON file")
    args = ap.parse_args(argv)
    pair = find_pair(args.pair)
    variants = [s.strip() for s in args.variants.split(",") if s.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants {sorted(unknown)} (known: {', '.join(VARIANTS)})")
    v = build_variants(pair, parse_sizes(args.sizes), load_plan_file(args.plan))
    launched = launch_once(v, variants)
    if args.info:
        Path(args.info).write_text(json.dumps({"launched": launched, "partition": v.partition.to_dict(),
                                               **v.info}, indent=1, default=str))
    print(f"profile_one: launched {', '.join(launched)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
