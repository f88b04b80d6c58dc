"""Nsight Compute metrics of the original and fused kernels (the paper's Figure 8 columns).

The paper used nvprof, which does not support Volta's successors. The same quantities
under Nsight Compute (checked on an H100 SXM, ncu 2025.3, driver 580; see
``docs/benchmarks.md``):

=========================  ===========================================================  ==================
nvprof (paper)             ncu metric (we collect)                                       our key
=========================  ===========================================================  ==================
issue_slot_utilization     smsp__issue_active.avg.pct_of_peak_sustained_active           issue_slot_utilization
stall_memory_dependency    smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct  stall_memory_dependency
achieved_occupancy         sm__warps_active.avg.pct_of_peak_sustained_active             achieved_occupancy
elapsed_cycles_pm (event)  sm__cycles_elapsed.max                                        elapsed_cycles
(kernel time)              gpu__time_duration.sum                                        duration_ns
(registers per thread)     launch__registers_per_thread                                  registers
=========================  ===========================================================  ==================

Notes on the correspondence:

- issue slot utilisation: nvprof's "percentage of issue slots that issued at least one
  instruction" is the issue-active fraction per scheduler (SMSP);
  ``sm__inst_issued.avg.pct_of_peak_sustained_active`` is close.
- memory stalls: nvprof's ``stall_memory_dependency`` was the share of *stall reasons*
  attributed to waiting on a memory result. ncu's long-scoreboard stall (waiting on an
  L1TEX result: global, local, surface, texture) is the same reason; it is reported as
  the percentage of active warp cycles stalled on it, which approaches the share of
  stalls when warps are mostly stalled (memory-bound kernels) and is lower otherwise.
- elapsed cycles: nvprof's ``elapsed_cycles_pm`` counted per-SM elapsed cycles; the
  ``.max`` over SMs is the kernel's span. It weighs the two originals in the paper's
  native issue-slot formula ``I = (I1*C1 + I2*C2) / (C1 + C2)`` (``native_issue``).
- ``--clock-control none``: ncu otherwise locks clocks to base, which changes the
  numbers; we keep the GPU's own clocks as in the timing runs.
- the launch metrics (``launch__*``) and ``gpu__time_duration`` cost no extra pass; the
  four others take about three replay passes per kernel.
"""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..toolkit import find_cuda_tool
from .pairs import Pair


@dataclass(frozen=True)
class MetricMapping:
    key: str
    """Our name (the paper's quantity)."""
    nvprof: str
    ncu: str
    unit: str
    meaning: str
    alternatives: tuple[str, ...] = ()


NVPROF_TO_NCU: tuple[MetricMapping, ...] = (
    MetricMapping("issue_slot_utilization", "issue_slot_utilization",
                  "smsp__issue_active.avg.pct_of_peak_sustained_active", "%",
                  "issue slots that issued at least one instruction, per scheduler",
                  ("sm__inst_issued.avg.pct_of_peak_sustained_active",)),
    MetricMapping("stall_memory_dependency", "stall_memory_dependency",
                  "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", "%",
                  "warps stalled waiting on a memory (L1TEX: global/local) result, per active warp cycle"),
    MetricMapping("achieved_occupancy", "achieved_occupancy",
                  "sm__warps_active.avg.pct_of_peak_sustained_active", "%",
                  "average active warps per active cycle over the SM's maximum"),
    MetricMapping("elapsed_cycles", "elapsed_cycles_pm",
                  "sm__cycles_elapsed.max", "cycle",
                  "elapsed SM cycles of the kernel (max over SMs)", ("gpc__cycles_elapsed.max",)),
    MetricMapping("duration_ns", "(gpu_time)", "gpu__time_duration.sum", "ns",
                  "kernel duration under the profiler"),
    MetricMapping("registers", "(registers)", "launch__registers_per_thread", "register/thread",
                  "registers per thread of the launch"),
)
"""The paper's nvprof metrics and their Nsight Compute equivalents (see the module doc)."""

NCU_METRICS: tuple[str, ...] = tuple(m.ncu for m in NVPROF_TO_NCU)
_BY_NCU = {m.ncu: m for m in NVPROF_TO_NCU}


def mapping_markdown() -> str:
    """The mapping table as Markdown (for REPORT.md / the metrics output)."""
    lines = ["| quantity | nvprof (paper) | ncu metric | unit |", "| --- | --- | --- | --- |"]
    for m in NVPROF_TO_NCU:
        lines.append(f"| {m.key} | `{m.nvprof}` | `{m.ncu}` | {m.unit} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- parsing
_SCALE = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_PREFIXABLE = {"cycle", "byte", "inst", "warp", "thread", "block", "sector", "request", "register", "hz", "Hz"}
_TIME_TO_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
               "second": 1e9, "s": 1e9}
_TIME_UNIT_OUT = "nsecond"


def parse_number(text: Any) -> float | None:
    """``"1,234,567"`` -> 1234567.0, ``"45.6"`` -> 45.6, ``"n/a"``/empty -> None."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip().strip('"').replace(",", "").replace("\u202f", "").replace(" ", "")
    if s in ("", "n/a", "N/A", "-", "nan", "NaN"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def to_base_unit(value: float | None, unit: str) -> tuple[float | None, str]:
    """Undoes ncu's unit auto-scaling: ``(2.5, "Mcycle")`` -> ``(2.5e6, "cycle")``;
    times go to nanoseconds; percentages and unknown units are kept."""
    unit = (unit or "").strip()
    if value is None:
        return None, unit
    if unit in _TIME_TO_NS:
        return value * _TIME_TO_NS[unit], _TIME_UNIT_OUT
    if len(unit) > 1 and unit[0] in _SCALE:
        base = unit[1:]
        head = base.split("/")[0]
        if head in _PREFIXABLE:
            return value * _SCALE[unit[0]], base
    return value, unit


@dataclass
class KernelMetrics:
    """One profiled kernel launch: ncu's ID, the kernel name, metrics in base units."""

    id: int
    kernel: str
    metrics: dict[str, float | None] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    block: str = ""
    grid: str = ""

    def paper(self) -> dict[str, float | None]:
        """The metrics under our keys (``NVPROF_TO_NCU``)."""
        out = {}
        for m in NVPROF_TO_NCU:
            value = self.metrics.get(m.ncu)
            if value is None:
                value = next((self.metrics[a] for a in m.alternatives if self.metrics.get(a) is not None), None)
            out[m.key] = value
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kernel": self.kernel, "block": self.block, "grid": self.grid,
                "metrics": self.metrics, "units": self.units, "paper": self.paper()}


def _csv_block(text: str) -> list[list[str]]:
    """The CSV records of ncu's output, from the header line (``"ID",...``) on; lines that
    are ncu's log (``==PROF==``, ``==WARNING==``) or program output are skipped."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith('"ID"')), None)
    if start is None:
        return []
    kept = [l for l in lines[start:] if l.strip() and not l.lstrip().startswith("==") and l.lstrip().startswith('"')]
    return [r for r in csv.reader(io.StringIO("\n".join(kept)))]


def parse_ncu_csv(text: str) -> list[KernelMetrics]:
    """Parses ``ncu --csv`` output (details page: one row per metric; or raw page: one row
    per kernel, metric columns, optional units row) into one ``KernelMetrics`` per launch,
    in launch order. Robust to ncu's log lines, program output before the header, numbers
    with thousands separators and auto-scaled units."""
    rows = _csv_block(text)
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in enumerate(header)}
    if "ID" not in col:
        return []
    kname = col.get("Kernel Name", col.get("Function Name"))
    long_format = "Metric Name" in col and "Metric Value" in col
    launches: dict[int, KernelMetrics] = {}

    def get(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    def launch_for(row: list[str]) -> KernelMetrics | None:
        id_text = get(row, "ID").strip()
        if not re.fullmatch(r"\d+", id_text):
            return None
        kid = int(id_text)
        if kid not in launches:
            launches[kid] = KernelMetrics(kid, row[kname] if kname is not None and kname < len(row) else "",
                                          block=get(row, "Block Size"), grid=get(row, "Grid Size"))
        return launches[kid]

    if long_format:
        for row in rows[1:]:
            km = launch_for(row)
            if km is None:
                continue
            name = get(row, "Metric Name").strip()
            value, unit = to_base_unit(parse_number(get(row, "Metric Value")), get(row, "Metric Unit"))
            km.metrics[name] = value
            km.units[name] = unit
        return [launches[k] for k in sorted(launches)]

    # raw page: metric names are the columns after the fixed ones; maybe a units row.
    fixed = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name", "Context",
             "Stream", "Block Size", "Grid Size", "Device", "CC", "Kernel Time", "Section Name"}
    metric_cols = [(i, h) for i, h in enumerate(header) if h not in fixed]
    units: dict[str, str] = {}
    for row in rows[1:]:
        if not get(row, "ID").strip():  # the units row
            units = {h: (row[i] if i < len(row) else "") for i, h in metric_cols}
            continue
        km = launch_for(row)
        if km is None:
            continue
        for i, h in metric_cols:
            value, unit = to_base_unit(parse_number(row[i] if i < len(row) else ""), units.get(h, ""))
            km.metrics[h] = value
            km.units[h] = unit
    return [launches[k] for k in sorted(launches)]


def match_variant(kernel_name: str, names: dict[str, str]) -> str | None:
    """Which variant a profiled kernel is: its name may be bare (``histogram``) or a
    demangled signature (``histogram(const float *, ...)``, ``void k<...>(...)``)."""
    text = kernel_name.strip()
    text = re.sub(r"^void\s+", "", text)
    for variant, name in sorted(names.items(), key=lambda kv: -len(kv[1])):
        if text == name or re.match(re.escape(name) + r"(\(|<|$)", text):
            return variant
    return None


def by_variant(kernels: Sequence[KernelMetrics], names: dict[str, str]) -> dict[str, KernelMetrics]:
    """Profiled launches keyed by variant (the first launch of each)."""
    out: dict[str, KernelMetrics] = {}
    for km in kernels:
        v = match_variant(km.kernel, names)
        if v is not None and v not in out:
            out[v] = km
    return out


def native_issue(i1: float | None, c1: float | None, i2: float | None, c2: float | None) -> float | None:
    """The paper's issue-slot utilisation of the two originals run natively:
    ``(I1*C1 + I2*C2) / (C1 + C2)`` (I: utilisation, C: elapsed cycles)."""
    if None in (i1, c1, i2, c2) or (c1 + c2) <= 0:  # type: ignore[operator]
        return None
    return (i1 * c1 + i2 * c2) / (c1 + c2)  # type: ignore[operator]


# ----------------------------------------------------------------------------- running ncu
def kernel_regex(names: Sequence[str]) -> str:
    """An ncu ``--kernel-name regex:`` that matches exactly these function names, bare or
    in a demangled signature, and not a longer name that contains one of them."""
    alts = "|".join(re.escape(n) for n in names)
    return f"(^|[^A-Za-z0-9_])({alts})([^A-Za-z0-9_]|$)"


def find_ncu() -> str | None:
    return find_cuda_tool("ncu")


def ncu_command(
    pair: Pair,
    sizes: dict[str, int],
    *,
    plan_file: str | Path | None,
    variants: Sequence[str],
    ncu: str = "ncu",
    metrics: Sequence[str] = NCU_METRICS,
    python: str | None = None,
    info_file: str | Path | None = None,
) -> list[str]:
    """The ncu command line that profiles ``variants`` of ``pair`` (one process)."""
    from .profile_one import format_sizes, kernel_names

    names = kernel_names(pair)
    cmd = [
        ncu, "--clock-control", "none", "--metrics", ",".join(metrics), "--csv", "--print-units", "base",
        "--target-processes", "all", "--kernel-name", "regex:" + kernel_regex([names[v] for v in variants]),
        "--launch-count", str(len(variants)),
        python or sys.executable, "-m", "hfuse.bench.profile_one", "--pair", pair.name,
        "--sizes", format_sizes(sizes), "--variants", ",".join(variants),
    ]
    if plan_file:
        cmd += ["--plan", str(plan_file)]
    if info_file:
        cmd += ["--info", str(info_file)]
    return cmd


def find_plan(pair: Pair, sizes: dict[str, int], plan_dirs: Sequence[str | Path]) -> Path | None:
    """The saved plan of ``pair`` at ``sizes`` (full mode's first, then quick's)."""
    k1, k2 = pair.kernels
    tail = f"__{pair.key}__{k1}-{sizes[k1]}__{k2}-{sizes[k2]}.json"
    for d in plan_dirs:
        for mode in ("full", "quick"):
            p = Path(d) / f"{mode}{tail}"
            if p.is_file():
                return p
    return None


METRICS_JSON = "metrics.json"
METRICS_CSV = "metrics.csv"
METRIC_ROW_FIELDS = ("pair", "variant", "kernel", "registers", "cap", "time_ms", "speedup_pct",
                     "duration_ns", "elapsed_cycles", "issue_slot_utilization", "stall_memory_dependency",
                     "achieved_occupancy", "verified")


def metric_rows(pairs_data: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat rows (one per pair x variant) from metrics.json's ``pairs`` mapping."""
    rows = []
    for pair_name, d in pairs_data.items():
        timing = d.get("timing") or {}
        native = timing.get("native_ms")
        for variant in ("k1", "k2", "nocap", "cap"):
            k = (d.get("kernels") or {}).get(variant)
            if not k:
                continue
            paper = k.get("paper") or {}
            t = timing.get(f"{variant}_ms")
            sp = ((native / t - 1.0) * 100.0) if (native and t and variant in ("nocap", "cap")) else None
            info = ((d.get("launch_info") or {}).get("kernels") or {}).get(variant) or {}
            rows.append({
                "pair": pair_name, "variant": variant, "kernel": k.get("kernel", ""),
                "registers": paper.get("registers") or info.get("registers"),
                "cap": (d.get("launch_info") or {}).get("cap") if variant == "cap" else "",
                "time_ms": t, "speedup_pct": sp, "duration_ns": paper.get("duration_ns"),
                "elapsed_cycles": paper.get("elapsed_cycles"),
                "issue_slot_utilization": paper.get("issue_slot_utilization"),
                "stall_memory_dependency": paper.get("stall_memory_dependency"),
                "achieved_occupancy": paper.get("achieved_occupancy"),
                "verified": (timing.get("verified") or {}).get(variant, "") if variant in ("nocap", "cap") else "",
            })
    return rows


def load_metrics(out_dir: str | Path) -> dict[str, Any]:
    path = Path(out_dir)
    path = path / METRICS_JSON if path.is_dir() else path
    if not path.is_file():
        return {}
    return json.loads(path.read_text())


def save_metrics(out_dir: str | Path, data: dict[str, Any]) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / METRICS_JSON).write_text(json.dumps(data, indent=1, default=str) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(METRIC_ROW_FIELDS), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in metric_rows(data.get("pairs") or {}):
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in METRIC_ROW_FIELDS})
    (out / METRICS_CSV).write_text(buf.getvalue())


def collect_pair(
    pair: Pair,
    sizes: dict[str, int],
    *,
    plan_file: Path | None,
    work_dir: Path,
    ncu: str,
    time_variants: bool = True,
    timeout_s: float = 300.0,
) -> dict[str, Any]:
    """Times and verifies the four variants in this process, then profiles them under ncu
    in a child process. Returns the pair's entry of metrics.json."""
    from .profile_one import build_variants, kernel_names, load_plan_file, verify_and_time
    from .environment import free_gpu_memory

    entry: dict[str, Any] = {"sizes": dict(sizes), "plan_file": str(plan_file) if plan_file else None}
    if time_variants:
        v = build_variants(pair, sizes, load_plan_file(plan_file), with_references=True)
        entry["partition"] = v.partition.to_dict()
        entry["launch_info"] = v.info
        entry["timing"] = verify_and_time(v)
        del v
        free_gpu_memory()
    variants = ["k1", "k2", "nocap", "cap"]
    info_file = work_dir / f"profile_{pair.key}.json"
    cmd = ncu_command(pair, sizes, plan_file=plan_file, variants=variants, ncu=ncu, info_file=info_file)
    entry["ncu_command"] = " ".join(cmd)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    entry["ncu_seconds"] = time.perf_counter() - start
    entry["ncu_returncode"] = proc.returncode
    if info_file.is_file():
        info = json.loads(info_file.read_text())
        entry.setdefault("launch_info", info)
        entry.setdefault("partition", info.get("partition"))
    kernels = parse_ncu_csv(proc.stdout)
    found = by_variant(kernels, kernel_names(pair))
    entry["kernels"] = {v: km.to_dict() for v, km in found.items()}
    missing = [v for v in variants if v not in found]
    if missing:
        tail = (proc.stderr or "")[-1500:] + (proc.stdout or "")[-1500:]
        entry["error"] = f"ncu gave no metrics for {', '.join(missing)} (exit {proc.returncode}): {tail.strip()}"
    k1, k2 = found.get("k1"), found.get("k2")
    if k1 and k2:
        p1, p2 = k1.paper(), k2.paper()
        entry["native_issue_slot_utilization"] = native_issue(
            p1["issue_slot_utilization"], p1["elapsed_cycles"], p2["issue_slot_utilization"], p2["elapsed_cycles"])
    return entry


def collect_pairs(
    pairs: Sequence[Pair],
    *,
    out_dir: str | Path,
    plan_dirs: Sequence[str | Path] = (),
    console: Any = None,
    ncu: str | None = None,
    time_variants: bool = True,
    time_budget_s: float | None = None,
    scale: float = 1.0,
) -> dict[str, Any]:
    """Collects metrics for ``pairs`` at their representative sizes into
    ``out_dir/metrics.json`` and ``metrics.csv`` (merged with earlier pairs; saved after
    each pair). A pair that fails is recorded with its error; the others go on.
    ``time_budget_s``: start no new pair after this many seconds."""
    from rich.console import Console

    from .pairs import representative_sizes
    from .environment import now_utc, nvidia_smi_clocks

    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ncu = ncu or find_ncu()
    data = load_metrics(out) or {"format": 1, "pairs": {}}
    data["mapping"] = [m.__dict__ | {"alternatives": list(m.alternatives)} for m in NVPROF_TO_NCU]
    data["meta"] = {"date": now_utc(), "clock_control": "none", "clocks": nvidia_smi_clocks(), "ncu": ncu}
    try:
        from ..runtime.device import DeviceLimits

        lim = DeviceLimits.current()
        data["meta"].update(gpu=lim.name, driver=lim.driver_version)
    except Exception:
        pass
    if ncu is None:
        console.print("[red]ncu (Nsight Compute) not found on PATH or in $CUDA_HOME/bin: no metrics[/]")
        data["meta"]["error"] = "ncu not found"
        save_metrics(out, data)
        return data
    t_start = time.perf_counter()
    for n, pair in enumerate(pairs, start=1):
        if time_budget_s is not None and time.perf_counter() - t_start > time_budget_s:
            console.print(f"[yellow]time budget spent: no metrics for {', '.join(p.name for p in pairs[n - 1:])}[/]")
            break
        sizes = representative_sizes(pair, scale=scale)
        plan_file = find_plan(pair, sizes, plan_dirs)
        console.print(f"[bold]metrics [{n}/{len(pairs)}] {pair.title}[/] "
                      f"({'plan ' + plan_file.name if plan_file else 'no plan: even split'})")
        start = time.perf_counter()
        try:
            entry = collect_pair(pair, sizes, plan_file=plan_file, work_dir=out, ncu=ncu, time_variants=time_variants)
        except Exception as exc:
            entry = {"sizes": sizes, "error": f"{type(exc).__name__}: {exc}"[:4000]}
        entry["seconds"] = time.perf_counter() - start
        data["pairs"][pair.name] = entry
        save_metrics(out, data)
        if entry.get("error"):
            console.print(f"  [yellow]{entry['error'].splitlines()[0][:300]}[/]")
        else:
            t = entry.get("timing") or {}
            console.print(f"  done in {entry['seconds']:.0f} s; native {t.get('native_ms', 0) or 0:.3f} ms, "
                          f"no cap {t.get('nocap_ms') or float('nan'):.3f} ms, cap {t.get('cap_ms') or float('nan'):.3f} ms")
    return data
