"""A plan as a readable table: baselines, then candidates fastest first."""
from __future__ import annotations

from .plan import Plan


def plan_table(plan: Plan) -> str:
    native = plan.baselines.two_streams.median_ms if plan.baselines.two_streams else None
    lines = [f"{'':<2}{'candidate':<34}{'ms':>9}{'vs native':>11}{'regs':>6}{'spill B':>9}{'occ':>6}  status"]

    def row(mark: str, label: str, ms: float | None, regs="", spill="", occ="", status="") -> str:
        speed = f"{native / ms:>10.2f}x" if (ms and native) else f"{'':>11}"
        time = f"{ms:>9.3f}" if ms is not None else f"{'-':>9}"
        return f"{mark:<2}{label[:33]:<34}{time}{speed}{regs:>6}{spill:>9}{occ:>6}  {status}"

    for name, timing in plan.baselines.alone.items():
        lines.append(row("", f"{name} alone", timing.median_ms, status="baseline"))
    if plan.baselines.two_streams:
        lines.append(row("", "native: two streams", plan.baselines.two_streams.median_ms, status="baseline"))
    if plan.baselines.graph:
        lines.append(row("", "CUDA graph, two branches", plan.baselines.graph.median_ms, status="baseline"))
    if plan.baselines.serial:
        lines.append(row("", "serial, one stream", plan.baselines.serial.median_ms, status="baseline"))
    if plan.baselines.co_resident:
        lines.append(row("", f"co-resident streams, {plan.baselines.co_resident_k}/SM", plan.baselines.co_resident.median_ms,
                         status="baseline"))
    ordered = sorted(plan.candidates, key=lambda r: (r.time_ms is None, r.time_ms or 0.0))
    for r in ordered:
        spill = str((r.spill_stores or 0) + (r.spill_loads or 0)) if r.spill_stores is not None else ""
        occ = f"{r.occupancy:.2f}" if r.occupancy is not None else ""
        status = "verified" if r.verified else (f"{(r.failure or 'failed').upper()}: " + (r.error or "").splitlines()[0][:60] if r.error else "")
        mark = "*" if r.label == plan.chosen else ""
        lines.append(row(mark, r.label, r.time_ms, str(r.registers or ""), spill, occ, status))
    ways = plan.baselines.ways()
    if ways:
        way = plan.baselines.fastest_way()
        lines.append(f"fastest unfused way: {way.replace('_', ' ')} ({ways[way].median_ms:.3f} ms), the reference "
                     "for the decision")
    for result in plan.sanitizer:
        lines.append(f"compute-sanitizer {result.tool}: {result.note}")
    verdict = "FUSE" if plan.should_fuse else "DO NOT FUSE"
    lines.append(f"decision: {verdict}: {plan.reason}")
    if not plan.should_fuse:
        lines.append(f"hfuse.launcher(plan) runs the original kernels: {plan.unfused_way.replace('_', ' ')} (fastest measured)")
    return "\n".join(lines)
