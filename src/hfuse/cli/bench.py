"""``hfuse bench``: reproduce the paper's evaluation (Figures 7 and 8) on this GPU.

    hfuse bench --quick                       # 16 pairs, one size each, coarse tuning
    hfuse bench --pairs dl --points 5         # full sweep of the 10 deep-learning pairs
    hfuse bench --pairs Hist+Maxpool,crypto   # names and categories mix
    hfuse bench --metrics-only --pairs dl     # Nsight Compute metrics (Figure 8) only
    hfuse bench --bounds-only                 # each point's resource bound (Nsight Compute, ``bound``)
    hfuse bench --plots-only                  # redraw figure7.png / figure8.md / report

Output (``--out``, default ``bench/results/<gpu>``, e.g. ``h100``; quick mode: its ``quick/`` subfolder):
results.json/.csv, plans/, cache/, metrics.json/.csv, units.json, figure7.png, figure8.md,
report_numbers.md.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any



def add_bench_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``bench`` subcommand (``set_defaults(run=...)``, called as run(args, console))."""
    p = subparsers.add_parser(
        "bench", help="reproduce the paper's evaluation (Figure 7 and 8) on this GPU",
        description="Run the paper's 16 kernel pairs over a sweep of execution-time ratios: native (two "
                    "streams), CUDA graph, vertical, naive and tuned horizontal fusion (each verified), "
                    "PyTorch's operators for the deep-learning pairs; Nsight Compute metrics; plots and tables.")
    p.add_argument("--quick", action="store_true",
                   help="one size per pair (ratio ~1), short timings, coarse candidates; no metrics unless --metrics")
    p.add_argument("--pairs", default=None,
                   help="comma-separated pair names (e.g. Hist+Maxpool), 'dl', 'crypto' or 'all' (default)")
    p.add_argument("--out", type=Path, default=None,
                   help="results folder (default bench/results/<gpu>, e.g. h100; quick mode: its quick/ subfolder)")
    p.add_argument("--points", type=int, default=None, help="full mode: at most this many sizes per pair")
    p.add_argument("--coarse", action="store_true", help="full mode with the quick mode's tuner settings")
    m = p.add_mutually_exclusive_group()
    m.add_argument("--metrics", dest="metrics", action="store_true", default=None,
                   help="collect Nsight Compute metrics after timing (default in full mode)")
    m.add_argument("--no-metrics", dest="metrics", action="store_false", help="skip the Nsight Compute metrics")
    p.add_argument("--metrics-only", action="store_true",
                   help="only collect the metrics (at the representative size, from saved plans)")
    p.add_argument("--bounds-only", action="store_true",
                   help="only measure each kernel's unit utilisation alone (Nsight Compute) at the sizes in the "
                        "results, and fill each point's resource bound")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch baseline")
    p.add_argument("--colocation-bound", action="store_true",
                   help="also measure each point's co-location bound (the kernels' time by blocks per SM and by SMs) "
                        "and the share of it the tuner captured")
    p.add_argument("--plots-only", action="store_true", help="redraw plots and tables from existing results")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="start no new measurement after this many seconds (default: none; e.g. 500 inside a 10-minute job)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every input size by this (e.g. 0.5: half the memory and verification time)")
    p.add_argument("--isolate", action="store_true",
                   help="measure candidates in a worker process under time limits, as 'hfuse tune' does "
                        "(default here: in this process; the benchmark kernels are our own)")
    p.add_argument("--no-progress", action="store_true", help="no tuner progress bars")
    p.set_defaults(run=run_bench)
    return p


def run_bench(args: argparse.Namespace, console: Any) -> int:
    from ..bench.pairs import select_pairs
    from ..bench.plots import draw_all
    from ..bench.report import write_report

    quick = bool(args.quick)
    if args.out is None:
        from ..bench.paths import default_results_dir

        base = default_results_dir()
        out = base / "quick" if quick else base
    else:
        out = args.out
    mode = None
    try:
        pairs = select_pairs(args.pairs)
    except ValueError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 2

    if not args.plots_only:
        if args.bounds_only:
            from ..bench.bound import collect_units
            from ..bench.suite import Results

            collect_units(Results.load(out).rows, out_dir=out, console=console, time_budget_s=args.time_budget)
        elif args.metrics_only:
            from ..bench.metrics import collect_pairs

            plan_dirs = [out / "plans", out / "quick" / "plans", out.parent / "plans"]
            collect_pairs(pairs, out_dir=out, plan_dirs=plan_dirs, console=console, time_budget_s=args.time_budget,
                          scale=args.scale)
        else:
            from ..bench.suite import run_suite, tune_settings

            metrics = (not quick) if args.metrics is None else bool(args.metrics)
            settings = tune_settings(quick or args.coarse, isolate=bool(args.isolate))
            run_suite(pairs, quick=quick, out_dir=out, metrics=metrics, torch_baseline=not args.no_torch,
                      progress=not args.no_progress, points=args.points, settings=settings, console=console,
                      time_budget_s=args.time_budget, scale=args.scale, colocation=args.colocation_bound)
            mode = "quick" if quick else "full"

    from ..bench.suite import fill_bounds

    if fill_bounds(out):
        console.print(f"resource bounds from {out / 'units.json'}")
    if mode is None:
        from ..bench.suite import Results

        rows = Results.load(out).rows
        modes = {r.get("mode") for r in rows}
        mode = "full" if "full" in modes else ("quick" if "quick" in modes else None)
    written = draw_all(out, mode=mode)
    report = write_report(out, mode=mode)
    for what, path in written.items():
        console.print(f"wrote {path}")
    if report:
        console.print(f"wrote {report}")
    if not written and not report:
        console.print(f"[yellow]nothing to draw: no results in {out}[/]")
    return 0
