"""What limits the Ethash pairs against their resource bound (issue 11), in Nsight Compute.

For each Ethash pair at its ratio-1 size, one process launches, once each: the two
originals alone, the tuned plan's fused kernel (from ``bench/results/h100/plans``) and
the SM-aware dispatch fusion at 1:1. ``ncu --clock-control none`` reads the bound's unit
utilisations (``hfuse.bench.bound.UNITS``) and what explains them: achieved occupancy,
registers and the occupancy they allow, eligible warps per scheduler, long-scoreboard
stalls. Written to ``bench/results/h100/limits/ethash_limits.json``.

    python bench/scripts/ethash_limits.py            # runs ncu on itself (--child)
"""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

from hfuse.bench.bound import DURATION, UNITS
from hfuse.bench.metrics import find_ncu, parse_ncu_csv
from hfuse.bench.pairs import find_pair, representative_sizes
from hfuse.tuning.launcher import launcher_for

PAIRS = ("Blake2B+Ethash", "Blake256+Ethash", "Ethash+SHA256")
EXPLAIN = (
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "smsp__warps_eligible.avg.per_cycle_active",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "sm__cycles_active.avg",
)
RESULTS = Path("bench/results/h100")


def child() -> None:
    import cupy

    from hfuse.api import fuse
    from hfuse.bench.suite import make_launches, plan_path
    from hfuse.layouts import DYNAMIC
    from hfuse.runtime.compile import Compiler
    from hfuse.runtime.device import DeviceLimits
    from hfuse.runtime.execute import prepare, prepare_fused
    from hfuse.tuning.plan import load_plan

    compiler = Compiler(limits=DeviceLimits.current())
    order = []
    for name in PAIRS:
        pair = find_pair(name)
        sizes = representative_sizes(pair)
        launches = make_launches(pair, sizes)
        for launch in launches:
            prepare(launch, compiler)()
            order.append(f"{name}:alone:{launch.kernel.name}")
        plan = load_plan(plan_path(RESULTS, "full", pair, sizes))
        launcher_for(plan)([l.args for l in launches])
        order.append(f"{name}:tuned:{plan.chosen or 'unfused'}")
        fused = fuse([l.kernel for l in launches], layout=DYNAMIC)
        kernel = compiler.load(compiler.compile(fused.source, [fused.name_expression]), fused.name_expression)
        packed = fused.pack([l.args for l in launches], [l.grid_for() for l in launches], [l.smem_for() for l in launches])
        prepare_fused(kernel, packed, launches)()
        order.append(f"{name}:dynamic:dynamic")
        cupy.cuda.runtime.deviceSynchronize()
        del launches
        cupy.get_default_memory_pool().free_all_blocks()
    print(json.dumps(order), file=sys.stderr)


def main() -> int:
    if "--child" in sys.argv:
        child()
        return 0
    ncu = find_ncu()
    metrics = [u.metric for u in UNITS] + [DURATION, *EXPLAIN]
    cmd = [ncu, "--clock-control", "none", "--metrics", ",".join(metrics), "--csv", "--print-units", "base",
           "--kernel-name", "regex:_search", sys.executable, __file__, "--child"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    listed = [l for l in proc.stderr.splitlines() if l.startswith('["')]
    if not listed:  # the child failed before it launched everything
        print(f"ncu exit {proc.returncode}; the launching process said:\n{proc.stderr[-3000:]}")
        return 1
    order = json.loads(listed[-1])
    kernels = parse_ncu_csv(proc.stdout)
    rows = []
    for what, km in zip(order, kernels):
        pair, role, label = what.split(":", 2)
        m = km.metrics
        rows.append({"pair": pair, "role": role, "label": label, "kernel": km.kernel.split("(")[0],
                     "duration_ms": (m.get(DURATION) or 0) / 1e6,
                     "units": {u.name: m.get(u.metric) for u in UNITS},
                     "explain": {k: m.get(k) for k in EXPLAIN}})
    from hfuse.runtime.device import DeviceLimits

    limits = DeviceLimits.current()
    out = {"gpu": limits.name, "driver": limits.driver_version,
           "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(cmd[:-3]) + " ... --child", "rows": rows,
           "ncu_returncode": proc.returncode, "profiled": len(kernels), "expected": len(order)}
    path = RESULTS / "limits" / "ethash_limits.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    for r in rows:
        u, e = r["units"], r["explain"]
        print(f"{r['pair']:<16} {r['role']:<7} {r['label'][:34]:<34} {r['duration_ms']:6.3f} ms  alu {u['alu'] or 0:5.1f}%  "
              f"issue {u['issue'] or 0:5.1f}%  occ {e['sm__warps_active.avg.pct_of_peak_sustained_active'] or 0:5.1f}%  "
              f"regs {e['launch__registers_per_thread'] or 0:4.0f}  eligible {e['smsp__warps_eligible.avg.per_cycle_active'] or 0:4.2f}")
    if len(kernels) != len(order):
        print(f"ncu profiled {len(kernels)} of {len(order)} launches (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
