"""The paper's evaluation on today's GPU: every pair over a sweep of sizes, every method.

For each pair and size point (``pairs.pair_sizes``) the two workloads are built once on
fresh device inputs and handed to the tuner, which measures (each fused variant verified
against the unfused outputs before it is timed):

- native: the two kernels on two streams (first launch to last finish),
- CUDA graph: the two launches as parallel branches of one graph,
- vertical fusion, naive horizontal fusion (even split, no profiling, no cap),
- tuned horizontal fusion: the tuner's choice, or the native time when it says
  "do not fuse" (that is the product's behaviour: it keeps the kernels apart),

and, for deep-learning pairs, PyTorch's own operators on two streams
(``torch_baseline``). Speedups are over native, in percent, as in the paper's figures:
``speedup = (native_ms / method_ms - 1) * 100`` (positive: faster than native).

Results go to ``out_dir/results.json`` and ``out_dir/results.csv`` after every point
(a crash keeps what was measured); a re-run replaces the rows of the points it measures
and keeps the others, so the full mode can run in chunks (``--pairs``). Each point's
plan is saved under ``out_dir/plans/`` (the metrics mode builds its fused kernels from
it) and the tuner's cache lives in ``out_dir/cache/`` (re-runs are cheap).

JSON schema (``RESULTS_FORMAT`` 1)::

    {"format": 1,
     "meta": {gpu, driver, cuda_runtime, compute_capability, sm_count, clock_khz,
              memory_clock_khz, clocks (nvidia-smi, if readable), date, hfuse_version,
              mode, settings (TuneSettings), versions {python, cupy, torch}},
     "runs": [meta, ...],             # one per invocation that wrote here
     "rows": [row, ...],               # ROW_FIELDS, one per pair x size point
     "errors": [{mode, pair, sizes, error, date}, ...]}

The CSV has the same rows, columns ``ROW_FIELDS``.
"""
from __future__ import annotations

import csv
import json
import math
import platform
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..files import write_atomically
from ..layouts import HORIZONTAL, LAYOUTS, VERTICAL
from .environment import free_gpu_memory, now_utc, nvidia_smi_clocks
from .pairs import DISPLAY, Pair, make_launches, pair_sizes
from .columns import colocation_columns, compiled_columns, measured_or_said
from .speedup import speedup_pct

RESULTS_FORMAT = 1
RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"

LAYOUT_COLUMNS: tuple[str, ...] = tuple(name for name in LAYOUTS if name != HORIZONTAL.name)
"""Layouts with columns of their own (``<name>_ms``, ``<name>_label``, ``speedup_<name>``): every
layout of the registry but horizontal fusion, whose candidates have the columns below."""

ROW_FIELDS: tuple[str, ...] = (
    "mode", "pair", "title", "category", "k1", "k2", "swept", "size_k1", "size_k2", "swept_size",
    "t1_ms", "t2_ms", "ratio",
    "native_ms", "graph_ms", "serial_ms", "co_resident_ms", "co_resident_k", "best_unfused_ms", "best_unfused_way",
    "naive_ms", "best_hfuse_ms", "best_hfuse_label",
    *(f"{name}_{what}" for name in LAYOUT_COLUMNS for what in ("ms", "label")),
    "tuned_ms", "bound_ms", "bound_unit", "captured",
    "decision", "chosen", "chosen_layout", "chosen_blocks", "chosen_grids", "registers", "register_cap",
    "occupancy",
    "speedup_graph", "speedup_naive", "speedup_best_hfuse", *(f"speedup_{name}" for name in LAYOUT_COLUMNS),
    "speedup_serial", "speedup_co_resident", "speedup_best_unfused", "speedup_bound", "speedup_tuned",
    "torch_ms", "torch_t1_ms", "torch_t2_ms", "speedup_torch", "torch_compile_ms", "speedup_torch_compile",
    "colocation_bound_ms", "colocation_limit", "colocation_share", "captured_colocation",
    "naive_verified", "vertical_verified", "chosen_verified", "candidates", "verified_candidates",
    "failed_candidates", "naive_error", "vertical_error", "torch_error", "torch_compile_error", "plan_file", "elapsed_s",
    "date",
)
"""Columns of results.csv (and keys of each JSON row), in order."""

NUMERIC_FIELDS = {
    "size_k1", "size_k2", "swept_size", "t1_ms", "t2_ms", "ratio", "native_ms", "graph_ms", "serial_ms",
    "co_resident_ms", "co_resident_k", "best_unfused_ms", "naive_ms", "best_hfuse_ms", "tuned_ms", "bound_ms",
    "captured", "registers", "occupancy", "speedup_graph", "speedup_naive", "speedup_best_hfuse", "speedup_serial",
    "speedup_co_resident", "speedup_best_unfused", "speedup_bound", "speedup_tuned", "torch_ms", "torch_t1_ms",
    "torch_t2_ms", "speedup_torch", "torch_compile_ms", "speedup_torch_compile", "colocation_bound_ms",
    "captured_colocation", "candidates", "verified_candidates", "failed_candidates", "elapsed_s",
    *(f"{name}_ms" for name in LAYOUT_COLUMNS), *(f"speedup_{name}" for name in LAYOUT_COLUMNS),
}
BOOL_FIELDS = {"naive_verified", "vertical_verified", "chosen_verified"}


# ----------------------------------------------------------------------------- settings
def tune_settings(quick: bool, **overrides: Any) -> Any:
    """The tuner's settings for a mode: quick = coarse candidates, short timings.

    Candidates are measured in this process (``isolate=False``) unless overridden: the
    benchmark kernels are our own, checked by the corpus differential tests and the
    sanitizers, and a worker process would copy each point's inputs (gigabytes for the
    deep-learning kernels) without changing any time it measures."""
    from ..tuning.tuner import TuneSettings

    if quick:
        base: dict[str, Any] = dict(granularity=256, neighbour_caps=False, refine=False, warmup_ms=10.0, rep_ms=40.0)
    else:
        base = {}
    base["isolate"] = False
    base.update(overrides)
    return TuneSettings(**base)


# ----------------------------------------------------------------------------- rows
def _first_line(text: str | None, limit: int = 300) -> str:
    if not text:
        return ""
    return text.strip().splitlines()[0][:limit] if text.strip() else ""


def _dims(dims: Iterable[Any] | None) -> str:
    if not dims:
        return ""
    return "+".join("-" if d is None else str(d) for d in dims)


def row_from_plan(
    pair: Pair,
    sizes: dict[str, int],
    plan: Any,
    *,
    mode: str,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """One results row from a tuner ``Plan`` (pure; no GPU).

    ``names`` are the launch names the tuner keyed ``plan.baselines.alone`` by (default:
    the workload keys, which are the launches' labels).
    """
    k1, k2 = pair.kernels
    names = list(names) if names is not None else [k1, k2]
    base = plan.baselines
    alone = [base.alone.get(n) for n in names]
    if None in alone and len(base.alone) == len(names):  # keyed otherwise: fall back to launch order
        alone = list(base.alone.values())
    t1 = alone[0].median_ms if alone[0] else None
    t2 = alone[1].median_ms if alone[1] else None
    native = base.two_streams.median_ms if base.two_streams else None
    graph = base.graph.median_ms if base.graph else None

    by_label = {c.candidate.label: c for c in plan.candidates}
    naive = by_label.get("naive")
    vertical = next((c for c in plan.candidates if c.candidate.layout == VERTICAL), None)
    best = fastest_of(plan, HORIZONTAL.name)
    layouts = {name: fastest_of(plan, name) for name in LAYOUT_COLUMNS}
    chosen = by_label.get(plan.chosen) if plan.chosen else None

    ways = base.ways()
    fastest_way = base.fastest_way() if ways else ""
    best_unfused = ways[fastest_way].median_ms if ways else None
    if plan.decision == "fuse" and chosen is not None and chosen.time_ms is not None:
        tuned = chosen.time_ms
    else:  # a declined plan's launcher runs the fastest unfused way it measured
        tuned = best_unfused if best_unfused is not None else native

    def ms(c: Any) -> float | None:
        return c.time_ms if (c is not None and c.verified) else None

    cap = chosen.candidate.register_cap if chosen is not None else None
    row: dict[str, Any] = {
        "mode": mode,
        "pair": pair.name,
        "title": pair.title,
        "category": pair.category,
        "k1": k1,
        "k2": k2,
        "swept": pair.swept,
        "size_k1": int(sizes[k1]),
        "size_k2": int(sizes[k2]),
        "swept_size": int(sizes[pair.swept]),
        "t1_ms": t1,
        "t2_ms": t2,
        "ratio": (t1 / t2) if (t1 and t2) else None,
        "native_ms": native,
        "graph_ms": graph,
        "serial_ms": base.serial.median_ms if base.serial else None,
        "co_resident_ms": base.co_resident.median_ms if base.co_resident else None,
        "co_resident_k": base.co_resident_k,
        "best_unfused_ms": best_unfused,
        "best_unfused_way": fastest_way,
        "naive_ms": ms(naive),
        "best_hfuse_ms": best.time_ms if best else None,
        "best_hfuse_label": best.candidate.label if best else "",
        **{f"{name}_ms": c.time_ms if c else None for name, c in layouts.items()},
        **{f"{name}_label": c.candidate.label if c else "" for name, c in layouts.items()},
        "tuned_ms": tuned,
        "bound_ms": None,  # filled from the kernels' unit utilisations (``bound.add_bounds``)
        "bound_unit": "",
        "captured": None,
        "decision": plan.decision,
        "chosen": plan.chosen or "",
        "chosen_layout": chosen.candidate.layout.spec if chosen else "",
        "chosen_blocks": _dims(chosen.candidate.blocks) if chosen else "",
        "chosen_grids": _dims(plan.grids) if (chosen and plan.grids) else "",
        "registers": chosen.registers if chosen else None,
        "register_cap": cap.label if cap is not None else ("none" if chosen else ""),
        "occupancy": chosen.occupancy if chosen else None,
        "speedup_graph": speedup_pct(native, graph),
        "speedup_naive": speedup_pct(native, ms(naive)),
        "speedup_best_hfuse": speedup_pct(native, best.time_ms if best else None),
        **{f"speedup_{name}": speedup_pct(native, c.time_ms if c else None) for name, c in layouts.items()},
        "speedup_serial": speedup_pct(native, base.serial.median_ms if base.serial else None),
        "speedup_co_resident": speedup_pct(native, base.co_resident.median_ms if base.co_resident else None),
        "speedup_best_unfused": speedup_pct(native, best_unfused),
        "speedup_bound": None,
        "speedup_tuned": speedup_pct(native, tuned),
        "torch_ms": None,
        "torch_t1_ms": None,
        "torch_t2_ms": None,
        "speedup_torch": None,
        "torch_compile_ms": None,
        "speedup_torch_compile": None,
        "colocation_bound_ms": None,
        "colocation_limit": "",
        "colocation_share": "",
        "captured_colocation": None,
        "naive_verified": bool(naive.verified) if naive else False,
        "vertical_verified": bool(vertical.verified) if vertical else False,
        "chosen_verified": bool(chosen.verified) if chosen else None,
        "candidates": len(plan.candidates),
        "verified_candidates": sum(1 for c in plan.candidates if c.verified),
        "failed_candidates": sum(1 for c in plan.candidates if c.error),
        "naive_error": _first_line(naive.error) if naive else "no 'naive' candidate in the plan",
        "vertical_error": _first_line(vertical.error) if vertical else "no vertical candidate in the plan",
        "torch_error": "",
        "torch_compile_error": "",
        "plan_file": "",
        "elapsed_s": None,
        "date": now_utc(),
    }
    return row


def fastest_of(plan: Any, layout: str) -> Any:
    """The plan's fastest verified candidate of the layout named ``layout`` (any parameters), or None."""
    timed = [c for c in plan.candidates
             if c.candidate.layout.name == layout and c.verified and c.time_ms is not None]
    return min(timed, key=lambda c: c.time_ms) if timed else None


def add_torch(row: dict[str, Any], torch_result: dict[str, Any]) -> dict[str, Any]:
    """Fills the PyTorch columns of ``row`` from ``torch_baseline.time_torch_pair``'s result."""
    two = torch_result.get("two_streams")
    row["torch_ms"] = two.median_ms if two else None
    alone = torch_result.get("alone") or []
    if len(alone) >= 2:
        row["torch_t1_ms"], row["torch_t2_ms"] = alone[0].median_ms, alone[1].median_ms
    row["speedup_torch"] = speedup_pct(row.get("native_ms"), row["torch_ms"])
    return row


def row_key(row: dict[str, Any]) -> tuple:
    return (row.get("mode"), row.get("pair"), int(row.get("size_k1") or 0), int(row.get("size_k2") or 0))


# ----------------------------------------------------------------------------- files
def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf -> None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def coerce_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row read back from CSV (all strings) or JSON with its numbers and booleans typed."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in NUMERIC_FIELDS:
            if value in (None, "", "None", "nan"):
                out[key] = None
            else:
                try:
                    f = float(value)
                    out[key] = int(f) if key in ("size_k1", "size_k2", "swept_size", "registers", "candidates",
                                                 "verified_candidates", "failed_candidates") else f
                except (TypeError, ValueError):
                    out[key] = None
        elif key in BOOL_FIELDS:
            if isinstance(value, bool) or value is None:
                out[key] = value
            else:
                out[key] = {"true": True, "false": False}.get(str(value).strip().lower())
        else:
            out[key] = "" if value is None else value
    # columns added since the row was written: unknown (numbers) or empty (text)
    for key in ROW_FIELDS:
        if key not in out:
            out[key] = None if key in NUMERIC_FIELDS or key in BOOL_FIELDS else ""
    return out


@dataclass
class Results:
    """The content of results.json: meta, runs, rows and errors; merge and save."""

    meta: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path) -> "Results":
        """Reads results.json (or the directory holding it); a missing file is empty results."""
        path = Path(path)
        if path.is_dir():
            path = path / RESULTS_JSON
        if not path.is_file():
            return cls()
        data = json.loads(path.read_text())
        if int(data.get("format", RESULTS_FORMAT)) > RESULTS_FORMAT:
            raise ValueError(f"{path}: results format {data['format']} is newer than this hfuse understands")
        return cls(
            meta=dict(data.get("meta") or {}),
            runs=list(data.get("runs") or []),
            rows=[coerce_row(r) for r in data.get("rows") or []],
            errors=list(data.get("errors") or []),
        )

    def add_row(self, row: dict[str, Any]) -> None:
        key = row_key(row)
        self.rows = [r for r in self.rows if row_key(r) != key] + [row]
        self.errors = [e for e in self.errors if _error_key(e) != key]

    def add_error(self, error: dict[str, Any]) -> None:
        key = _error_key(error)
        self.errors = [e for e in self.errors if _error_key(e) != key] + [error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "meta": self.meta,
            "runs": self.runs,
            "rows": [{k: _clean(r.get(k)) for k in ROW_FIELDS} for r in self.rows],
            "errors": self.errors,
        }

    def save(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Writes results.json and results.csv atomically (write, then rename)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        jpath, cpath = out / RESULTS_JSON, out / RESULTS_CSV
        write_atomically(jpath, json.dumps(self.to_dict(), indent=1, default=str) + "\n")
        write_atomically(cpath, rows_to_csv(self.rows))
        return jpath, cpath

    def select(self, mode: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.rows if mode is None or r.get("mode") == mode]


def _error_key(error: dict[str, Any]) -> tuple:
    sizes = error.get("sizes") or {}
    pair = error.get("pair", "")
    kernels = pair.lower().split("+")
    vals = [int(sizes.get(k, 0)) for k in kernels] if len(kernels) == 2 else [0, 0]
    return (error.get("mode"), pair, *vals)


def rows_to_csv(rows: Sequence[dict[str, Any]]) -> str:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(ROW_FIELDS), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if r.get(k) is None else _clean(r.get(k))) for k in ROW_FIELDS})
    return buf.getvalue()


def read_csv_rows(path: str | Path) -> list[dict[str, Any]]:
    with open(path, newline="") as f:
        return [coerce_row(r) for r in csv.DictReader(f)]


def plan_path(out_dir: str | Path, mode: str, pair: Pair, sizes: dict[str, int]) -> Path:
    k1, k2 = pair.kernels
    return Path(out_dir) / "plans" / f"{mode}__{pair.key}__{k1}-{sizes[k1]}__{k2}-{sizes[k2]}.json"


# ----------------------------------------------------------------------------- meta
def run_meta(mode: str, settings: Any, pairs: Sequence[Pair]) -> dict[str, Any]:
    from ..tuning.plan import hfuse_version

    meta: dict[str, Any] = {
        "date": now_utc(),
        "mode": mode,
        "pairs": [p.name for p in pairs],
        "hfuse_version": hfuse_version(),
        "settings": settings.to_dict() if hasattr(settings, "to_dict") else dict(settings or {}),
        "speedup_definition": "(native_ms / method_ms - 1) * 100; native = two kernels on two streams",
        "host": platform.node(),
        "versions": {"python": platform.python_version()},
    }
    try:
        from ..runtime.device import DeviceLimits

        limits = DeviceLimits.current()
        meta.update(
            gpu=limits.name, driver=limits.driver_version, cuda_runtime=limits.runtime_version,
            compute_capability=list(limits.compute_capability), sm_count=limits.sm_count,
            l2_bytes=limits.l2_bytes, clock_khz=limits.clock_khz, memory_clock_khz=limits.memory_clock_khz,
        )
    except Exception as exc:  # no GPU: meta without device facts
        meta["device_error"] = f"{type(exc).__name__}: {exc}"
    meta["clocks"] = nvidia_smi_clocks()
    for module in ("cupy", "torch", "numpy"):
        try:
            meta["versions"][module] = __import__(module).__version__
        except Exception:
            pass
    return meta


# ----------------------------------------------------------------------------- running
def measure_point(
    pair: Pair,
    sizes: dict[str, int],
    *,
    mode: str,
    settings: Any,
    out_dir: Path,
    torch_baseline: bool,
    progress: bool,
    console: Any = None,
    colocation: bool = False,
) -> dict[str, Any]:
    """Tunes (and times PyTorch for) one pair at one size point; returns the row."""
    from ..tuning.tuner import tune

    start = time.perf_counter()
    launches = make_launches(pair, sizes)
    try:
        plan = tune(launches, settings, cache_dir=out_dir / "cache", use_cache=True, progress=progress)
        ppath = plan_path(out_dir, mode, pair, sizes)
        plan.save(ppath)
        row = row_from_plan(pair, sizes, plan, mode=mode, names=[l.name for l in launches])
        row["plan_file"] = str(ppath.relative_to(out_dir))
        if torch_baseline and pair.category == "dl":
            free_gpu_memory()  # the tuner's cached blocks would leave PyTorch too little
            try:
                from .torch_baseline import time_torch_pair

                add_torch(row, time_torch_pair(pair.kernels, launches, warmup_ms=settings.warmup_ms,
                                               rep_ms=settings.rep_ms, flush_l2=settings.flush_l2))
            except Exception as exc:  # PyTorch missing or failing must not lose the row
                row["torch_error"] = f"{type(exc).__name__}: {_first_line(str(exc))}"
                if console is not None:
                    console.print(f"  [yellow]PyTorch baseline failed:[/] {row['torch_error']}")
            measured_or_said(row, "torch_compile_error", console, "torch.compile baseline",
                             compiled_columns, pair.kernels, launches, settings, row.get("native_ms"))
        if colocation:  # the fastest any co-location could be, from the kernels' curves (issue 22)
            measured_or_said(row, "colocation_limit", console, "co-location bound",
                             colocation_columns, launches, row.get("best_unfused_ms"), row.get("tuned_ms"))
    finally:
        del launches
        free_gpu_memory()
    row["elapsed_s"] = time.perf_counter() - start
    return row


def _describe(row: dict[str, Any]) -> str:
    def f(v: Any, spec: str = ".3f") -> str:
        return "-" if v is None else format(v, spec)

    return (f"ratio {f(row['ratio'], '.2f')}  native {f(row['native_ms'])} ms  "
            f"tuned {f(row['speedup_tuned'], '+.1f')}%  naive {f(row['speedup_naive'], '+.1f')}%  "
            f"vertical {f(row['speedup_vertical'], '+.1f')}%  graph {f(row['speedup_graph'], '+.1f')}%"
            + (f"  torch {f(row['speedup_torch'], '+.1f')}%" if row.get("torch_ms") else "")
            + f"  [{row['decision']}{': ' + row['chosen'] if row['chosen'] else ''}]  {f(row['elapsed_s'], '.0f')} s")


def run_suite(
    pairs: Sequence[Pair],
    *,
    quick: bool,
    out_dir: str | Path,
    metrics: bool,
    torch_baseline: bool,
    progress: bool = True,
    points: int | None = None,
    settings: Any = None,
    console: Any = None,
    sizes: dict[str, list[dict[str, int]]] | None = None,
    time_budget_s: float | None = None,
    scale: float = 1.0,
    colocation: bool = False,
) -> list[dict[str, Any]]:
    """Runs the evaluation for ``pairs``; returns the rows measured in this call.

    ``quick``: one size point per pair (ratio ~1) and coarse tuner settings; else the
    full sweep (``points`` thins it). ``metrics``: afterwards collect Nsight Compute
    metrics at the representative size (``metrics.collect_pairs``). A pair whose point
    fails is recorded in ``errors`` with the message and the run goes on. ``sizes``
    overrides the size points of some pairs (pair name -> list of {workload: size}).
    ``time_budget_s``: start no new point after this many seconds (the rest are recorded
    as skipped), so a run inside a time-limited job ends cleanly with its plots.
    ``colocation``: also measure each point's co-location bound (``colocation``: the
    kernels' curves by blocks per SM and by SMs) and the share of it the tuner captured.
    ``scale`` multiplies every size (``pairs.pair_sizes``).
    """
    from rich.console import Console

    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    mode = "quick" if quick else "full"
    settings = settings or tune_settings(quick)
    results = Results.load(out)
    meta = run_meta(mode, settings, pairs)
    meta["torch_baseline"] = bool(torch_baseline)
    meta["size_scale"] = scale
    results.meta = meta
    results.runs.append(meta)
    results.save(out)
    console.print(f"[bold]hfuse bench[/] ({mode}): {len(pairs)} pairs on {meta.get('gpu', '?')} "
                  f"(driver {meta.get('driver', '?')}), results in {out}")
    try:
        from ..runtime.timing import Timer

        Timer(flush_l2=False).warm_gpu(500.0)  # as the paper: let clocks settle first
    except Exception:
        pass

    measured: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    for n, pair in enumerate(pairs, start=1):
        try:
            points_list = (sizes or {}).get(pair.name) or pair_sizes(pair, quick=quick, points=points, scale=scale)
        except Exception as exc:
            points_list = []
            console.print(f"[red]{pair.name}: cannot make its size list: {exc}[/]")
        for point in points_list:
            if time_budget_s is not None and time.perf_counter() - t_start > time_budget_s:
                console.print(f"[yellow]time budget ({time_budget_s:.0f} s) spent: skipping {pair.name} {point}[/]")
                results.add_error({"mode": mode, "pair": pair.name, "sizes": dict(point),
                                   "error": f"skipped: time budget of {time_budget_s:.0f} s spent", "date": now_utc()})
                continue
            label = ", ".join(f"{DISPLAY[k]} {point[k]:,}" for k in pair.kernels)
            console.print(f"[bold][{n}/{len(pairs)}] {pair.title}[/] ({label})  "
                          f"[dim]{time.perf_counter() - t_start:.0f} s so far[/]")
            try:
                row = measure_point(pair, point, mode=mode, settings=settings, out_dir=out,
                                    torch_baseline=torch_baseline, progress=progress, console=console,
                                    colocation=colocation)
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
                console.print(f"  [red]skipped:[/] {_first_line(message)}")
                results.add_error({"mode": mode, "pair": pair.name, "sizes": dict(point), "error": message[:4000],
                                   "traceback": traceback.format_exc()[-4000:], "date": now_utc()})
                results.save(out)
                free_gpu_memory()
                continue
            console.print("  " + _describe(row))
            results.add_row(row)
            results.save(out)
            measured.append(row)

    results.save(out)
    if metrics:
        from .bound import collect_units
        from .metrics import collect_pairs

        collect_pairs(pairs, out_dir=out, plan_dirs=[out / "plans"], console=console, scale=scale)
        collect_units(results.select(mode), out_dir=out, console=console)
        fill_bounds(out)
    return measured


def fill_bounds(out_dir: str | Path) -> int:
    """Fills every row's resource bound from ``units.json`` (``bound.add_bounds``) and saves;
    returns how many rows have one."""
    from .bound import add_bounds, load_units

    units = load_units(out_dir).get("kernels") or {}
    results = Results.load(out_dir)
    if not units or not results.rows:
        return 0
    filled = add_bounds(results.rows, units)
    results.save(out_dir)
    return filled

