"""Each benchmark kernel alone on this GPU: time, registers, shared memory (kernels.json).

    python -m hfuse.bench.kernel_report          # writes bench/results/<gpu>/kernels.json
    python -m hfuse.bench.kernel_report --calibrate      # also suggest sizes for ~2 ms

Calibration times each kernel at two sizes of its sweep, fits time = a + b * size and
suggests the size that gives ``--target-ms``; the suggestions are printed and saved, and
a person copies them into the workload modules (sizes are code, not measurements).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from ..runtime.compile import Compiler
from ..runtime.device import DeviceLimits, require_gpu
from ..runtime.execute import prepare
from ..runtime.timing import Timer
from .workloads import registry


def measure(name: str, size: int, compiler: Compiler, timer: Timer) -> dict[str, Any]:
    workload = registry()[name]
    launch = workload.make(size)
    prepared = prepare(launch, compiler)
    timing = timer.time(lambda: prepared(), warmup_ms=50, rep_ms=300)
    res = prepared.kernel.resources
    row = {
        "kernel": name,
        "function": launch.kernel.instance,
        "size": size,
        "size_meaning": workload.size_meaning,
        "block": list(prepared.block.as_tuple()),
        "grid": list(prepared.grid.as_tuple()),
        "median_ms": timing.median_ms,
        "p20_ms": timing.p20_ms,
        "p80_ms": timing.p80_ms,
        "reps": timing.n,
        "registers": res.registers,
        "local_bytes": res.local_bytes,
        "spill_stores": res.spill_stores,
        "static_smem": res.static_smem,
        "dynamic_smem": prepared.shared_mem,
    }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None, help="default: bench/results/<gpu>/kernels.json")
    parser.add_argument("--kernels", default=",".join(registry()))
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--target-ms", type=float, default=2.0)
    args = parser.parse_args(argv)
    require_gpu()
    limits = DeviceLimits.current()
    compiler, timer = Compiler(limits=limits), Timer(limits)
    timer.warm_gpu()
    rows, suggestions = [], {}
    for name in args.kernels.split(","):
        workload = registry()[name]
        row = measure(name, workload.default_size, compiler, timer)
        require_gpu().get_default_memory_pool().free_all_blocks()  # inputs of several GB each
        rows.append(row)
        print(f"{name:<10} size {row['size']:>12}  {row['median_ms']:8.3f} ms  {row['registers']:>3} regs  "
              f"smem {row['static_smem']}+{row['dynamic_smem']} B", flush=True)
        if args.calibrate:
            low, high = workload.sweep[1], workload.sweep[-2]
            t_low = measure(name, low, compiler, timer)["median_ms"]
            t_high = measure(name, high, compiler, timer)["median_ms"]
            slope = (t_high - t_low) / (high - low)
            base = t_low - slope * low
            best = round((args.target_ms - base) / slope) if slope > 0 else workload.default_size
            suggestions[name] = {"low": [low, t_low], "high": [high, t_high], "suggested_size": best}
            print(f"           {low}: {t_low:.3f} ms, {high}: {t_high:.3f} ms -> size {best} for {args.target_ms} ms", flush=True)
    out = {
        "gpu": limits.name,
        "driver": limits.driver_version,
        "cuda_runtime": limits.runtime_version,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "kernels": rows,
    }
    if suggestions:
        out["calibration"] = {"target_ms": args.target_ms, "kernels": suggestions}
    if args.out is None:
        from .paths import RESULTS_ROOT, gpu_slug

        path = RESULTS_ROOT / gpu_slug(limits.name) / "kernels.json"
    else:
        path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
