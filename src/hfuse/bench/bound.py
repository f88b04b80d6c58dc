"""The resource bound of a pair: no way of running its kernels together can beat it.

Co-located kernels share the SM's issue slots and pipes and the GPU's DRAM. A kernel
alone keeps unit ``u`` busy for ``t_alone x utilisation_u`` (Nsight Compute's
``pct_of_peak_sustained_elapsed``: the share of the unit's peak over the kernel's
elapsed time). Run together, they need at least the sum of those busy times on every
unit, and at least as long as the slower kernel alone::

    bound = max(t1, t2, max over units u of (t1 * util1_u + t2 * util2_u))

Example (the issue's): SHA256 keeps the ALU pipe 95% busy for 1.98 ms and Ethash 15% for
1.94 ms, so Ethash+SHA256 cannot beat 0.95 * 1.98 + 0.15 * 1.94 = 2.17 ms.

The utilisations are measured per kernel and size, alone, under ``ncu --clock-control
none`` (``collect_units``: one profiling process per kernel, each size launched once);
they are saved in ``units.json`` and every results row gets ``bound_ms``, the unit that
sets it (``bound_unit``: a unit's name, or ``alone`` when the slower kernel does) and
``captured``: the share of the achievable gain over the best unfused way that the tuned
result takes, ``(best_unfused - tuned) / (best_unfused - bound)``.

    python -m hfuse.bench.bound --launch ethash=409600,sha256=13000000   # what ncu runs
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..files import write_atomically
from .metrics import find_ncu, kernel_regex, parse_ncu_csv
from .pairs import KERNEL_FUNCTIONS
from .environment import now_utc, nvidia_smi_clocks
from .speedup import speedup_pct

UNITS_JSON = "units.json"
ALONE = "alone"
"""``bound_unit`` when the slower kernel alone sets the bound."""


@dataclass(frozen=True)
class Unit:
    name: str
    metric: str
    """Nsight Compute's metric: the unit's busy share of its peak over elapsed time, in %."""
    what: str


UNITS: tuple[Unit, ...] = (
    Unit("issue", "smsp__issue_active.avg.pct_of_peak_sustained_elapsed", "warp schedulers' issue slots"),
    Unit("alu", "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed", "integer and logic pipe"),
    Unit("fma", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed", "FP32 multiply-add pipe"),
    Unit("fmaheavy", "sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_elapsed",
         "FP32 and integer multiply pipe"),
    Unit("fp64", "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_elapsed", "FP64 pipe"),
    Unit("xu", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed", "transcendental and conversion pipe"),
    Unit("lsu", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed", "load/store pipe"),
    Unit("adu", "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_elapsed", "address divergence unit"),
    Unit("cbu", "sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_elapsed", "branch unit"),
    Unit("uniform", "sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_elapsed", "uniform datapath"),
    Unit("l1", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "L1 and shared memory"),
    Unit("l2", "lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 cache"),
    Unit("dram", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM bandwidth"),
)
DURATION = "gpu__time_duration.sum"


# ----------------------------------------------------------------------------- the bound
@dataclass(frozen=True)
class Bound:
    ms: float
    unit: str
    """The unit's name, or ``ALONE``."""


def resource_bound(times_ms: Sequence[float], utilisations: Sequence[Mapping[str, float]]) -> Bound:
    """The bound of kernels taking ``times_ms`` alone with ``utilisations`` (unit name ->
    fraction of peak, 0..1, alone). A unit missing for a kernel counts as idle."""
    if len(times_ms) != len(utilisations) or not times_ms:
        raise ValueError("one time and one utilisation table per kernel")
    best = Bound(max(times_ms), ALONE)
    for unit in dict.fromkeys(name for table in utilisations for name in table):
        busy = sum(t * table.get(unit, 0.0) for t, table in zip(times_ms, utilisations))
        if busy > best.ms:
            best = Bound(busy, unit)
    return best


def captured(best_unfused_ms: float | None, tuned_ms: float | None, bound_ms: float | None) -> float | None:
    """The share of the achievable gain taken: 1 at the bound, 0 at the best unfused way."""
    if None in (best_unfused_ms, tuned_ms, bound_ms) or best_unfused_ms <= bound_ms:  # type: ignore[operator]
        return None
    return (best_unfused_ms - tuned_ms) / (best_unfused_ms - bound_ms)  # type: ignore[operator]


def unit_key(kernel: str, size: int) -> str:
    return f"{kernel}@{int(size)}"


def add_bounds(rows: Iterable[dict[str, Any]], units: Mapping[str, Any]) -> int:
    """Fills ``bound_ms``, ``bound_unit`` and ``captured`` of each row whose two kernels'
    utilisations at the row's sizes are in ``units`` (``units.json``'s ``kernels``).
    Returns how many rows got a bound."""
    filled = 0
    for row in rows:
        tables = [units.get(unit_key(row["k1"], row["size_k1"] or 0)), units.get(unit_key(row["k2"], row["size_k2"] or 0))]
        times = [row.get("t1_ms"), row.get("t2_ms")]
        if any(t is None for t in tables) or any(t is None for t in times):
            continue
        bound = resource_bound(times, [t["utilisation"] for t in tables])  # type: ignore[index]
        row["bound_ms"], row["bound_unit"] = bound.ms, bound.unit
        row["captured"] = captured(row.get("best_unfused_ms"), row.get("tuned_ms"), bound.ms)
        row["speedup_bound"] = speedup_pct(row.get("native_ms"), bound.ms)
        filled += 1
    return filled


# ----------------------------------------------------------------------------- measuring
def parse_launches(text: str) -> list[tuple[str, int]]:
    """``"ethash=409600,sha256=13000000"`` -> ``[("ethash", 409600), ("sha256", 13000000)]``."""
    out = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        kernel, _, size = item.partition("=")
        out.append((kernel.strip().lower(), int(float(size))))
    return out


def launch_alone(launches: Sequence[tuple[str, int]]) -> None:
    """Builds each workload and launches it once, in order (for ncu); prints nothing."""
    import cupy

    from ..runtime.compile import Compiler
    from ..runtime.device import DeviceLimits
    from ..runtime.execute import prepare
    from .workloads import registry

    compiler, workloads = Compiler(limits=DeviceLimits.current()), registry()
    for kernel, size in launches:
        launch = workloads[kernel].make(size)
        prepare(launch, compiler)()
        cupy.cuda.runtime.deviceSynchronize()
        del launch
        cupy.get_default_memory_pool().free_all_blocks()


def ncu_units_command(ncu: str, launches: Sequence[tuple[str, int]], metrics: Sequence[str]) -> list[str]:
    names = sorted({KERNEL_FUNCTIONS[k] for k, _ in launches})
    return [ncu, "--clock-control", "none", "--metrics", ",".join(metrics), "--csv", "--print-units", "base",
            "--kernel-name", "regex:" + kernel_regex(names), "--launch-count", str(len(launches)),
            sys.executable, "-m", "hfuse.bench.bound", "--launch", ",".join(f"{k}={s}" for k, s in launches)]


UNKNOWN_METRIC = re.compile(r"Failed to find metric\s+'?([\w.]+)")


def profile_units(ncu: str, launches: Sequence[tuple[str, int]], timeout_s: float = 300.0) -> dict[str, Any]:
    """Each launch's utilisation of every unit this GPU's ncu knows (metrics it does not
    know are dropped and said so). Returns ``{unit_key: {...}}`` and the dropped metrics."""
    metrics = [u.metric for u in UNITS] + [DURATION]
    dropped: list[str] = []
    for _ in range(len(UNITS)):
        proc = subprocess.run(ncu_units_command(ncu, launches, metrics), capture_output=True, text=True,
                              timeout=timeout_s)
        unknown = [m for m in UNKNOWN_METRIC.findall(proc.stdout + proc.stderr) if m in metrics]
        if not unknown:
            break
        dropped += unknown
        metrics = [m for m in metrics if m not in unknown]
    profiled = parse_ncu_csv(proc.stdout)
    out: dict[str, Any] = {}
    for (kernel, size), km in zip(launches, profiled):
        if KERNEL_FUNCTIONS[kernel] not in km.kernel:
            raise RuntimeError(f"ncu's launch {km.id} is {km.kernel!r}, expected {KERNEL_FUNCTIONS[kernel]} "
                               f"(launch order lost)")
        out[unit_key(kernel, size)] = {
            "kernel": kernel, "size": size, "duration_ns": km.metrics.get(DURATION),
            "utilisation": {u.name: km.metrics[u.metric] / 100.0 for u in UNITS
                            if km.metrics.get(u.metric) is not None},
        }
    if len(out) < len(launches):
        tail = (proc.stderr or "")[-1500:] + (proc.stdout or "")[-800:]
        raise RuntimeError(f"ncu profiled {len(out)} of {len(launches)} launches (exit {proc.returncode}): {tail.strip()}")
    return {"kernels": out, "dropped_metrics": dropped}


def load_units(out_dir: str | Path) -> dict[str, Any]:
    path = Path(out_dir) / UNITS_JSON
    return json.loads(path.read_text()) if path.is_file() else {}


def collect_units(
    rows: Sequence[dict[str, Any]],
    *,
    out_dir: str | Path,
    console: Any,
    ncu: str | None = None,
    time_budget_s: float | None = None,
) -> dict[str, Any]:
    """Profiles every (kernel, size) of ``rows`` not yet in ``out_dir/units.json``, one ncu
    process per kernel, saving after each; returns the file's content."""
    out = Path(out_dir)
    data = load_units(out) or {"format": 1, "kernels": {}}
    data["meta"] = {"date": now_utc(), "clock_control": "none", "clocks": nvidia_smi_clocks(),
                    "units": [u.__dict__ for u in UNITS]}
    try:
        from ..runtime.device import DeviceLimits

        limits = DeviceLimits.current()
        data["meta"].update(gpu=limits.name, driver=limits.driver_version)
    except Exception:
        pass
    ncu = ncu or find_ncu()
    if ncu is None:
        console.print("[red]ncu (Nsight Compute) not found: no resource bounds[/]")
        return data
    wanted: dict[str, list[int]] = {}
    for row in rows:
        for kernel, size in ((row["k1"], row["size_k1"]), (row["k2"], row["size_k2"])):
            if size and unit_key(kernel, size) not in data["kernels"]:
                wanted.setdefault(kernel, [])
                if int(size) not in wanted[kernel]:
                    wanted[kernel].append(int(size))
    start = time.perf_counter()
    for kernel, sizes in wanted.items():
        if time_budget_s is not None and time.perf_counter() - start > time_budget_s:
            console.print(f"[yellow]time budget spent: no unit utilisation for {kernel}[/]")
            continue
        began = time.perf_counter()
        try:
            found = profile_units(ncu, [(kernel, s) for s in sorted(sizes)])
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            console.print(f"  [yellow]{kernel}: {str(exc).splitlines()[0][:300]}[/]")
            data.setdefault("errors", {})[kernel] = str(exc)[:3000]
            continue
        data["kernels"].update(found["kernels"])
        data["dropped_metrics"] = sorted(set(data.get("dropped_metrics", [])) | set(found["dropped_metrics"]))
        write_atomically(out / UNITS_JSON, json.dumps(data, indent=1) + "\n")
        busiest = max(found["kernels"].values(), key=lambda k: k["size"])["utilisation"]
        top = sorted(busiest.items(), key=lambda kv: -kv[1])[:3]
        console.print(f"  units of {kernel} at {len(sizes)} sizes in {time.perf_counter() - began:.0f} s: "
                      + ", ".join(f"{u} {v:.0%}" for u, v in top))
    write_atomically(out / UNITS_JSON, json.dumps(data, indent=1) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Launch benchmark kernels alone, once each (run under ncu).")
    parser.add_argument("--launch", required=True, help="KERNEL=SIZE,... in order")
    args = parser.parse_args(argv)
    launch_alone(parse_launches(args.launch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
