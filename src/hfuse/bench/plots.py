"""The paper's Figure 7 (speedup over native vs execution-time ratio, a panel per pair)
and Figure 8 (metrics of the fused kernels, with and without register cap) from our
results: ``figure7.png`` and ``figure8.md``.

Figure 7: one panel per pair (paper order), x = execution-time ratio t1/t2 of the two
kernels alone (log2 axis), y = speedup over native in percent, a marker per method;
dashed lines mark each method's average over the ratios (as the paper's horizontal
lines). Methods: HFuse as tuned (the product: the tuner's choice, 0% when it declines),
the fastest horizontal fusion measured (what the paper plotted as HFuse, even where it
loses), naive HFuse (even split, no cap), vertical fusion, the interleaved inter-block and
SM-aware dispatch layouts (their best measured), the fastest unfused way (serial, two
streams, graph or co-resident streams), the CUDA graph of the two kernels, for
deep-learning pairs PyTorch's operators on two streams, and the pair's resource bound
(``bound``: no co-location can be faster).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from .pairs import PAIRS, find_pair

METHODS: tuple[tuple[str, str, str, str], ...] = (
    # (row column, legend label, marker, colour)
    ("speedup_tuned", "HFuse (tuned)", "o", "tab:blue"),
    ("speedup_best_hfuse", "HFuse (best fused)", "o", "tab:cyan"),
    ("speedup_naive", "Naive HFuse", "^", "tab:orange"),
    ("speedup_vertical", "VFuse", "s", "tab:green"),
    ("speedup_interleaved", "Inter-block, interleaved", "v", "tab:brown"),
    ("speedup_dynamic", "SM-aware dispatch", "P", "tab:purple"),
    ("speedup_best_unfused", "Best unfused way", "x", "black"),
    ("speedup_graph", "CUDA graph", "x", "tab:gray"),
    ("speedup_torch", "PyTorch 2 streams", "D", "tab:red"),
    ("speedup_torch_compile", "torch.compile (combo kernels)", "d", "tab:pink"),
    ("speedup_bound", "Resource bound", "_", "tab:olive"),
)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def ordered_pairs(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Pair names present in ``rows``, in the paper's order (unknown names last)."""
    present = {r["pair"] for r in rows}
    known = [p.name for p in PAIRS if p.name in present]
    return known + sorted(present - set(known))


def _title(name: str) -> str:
    try:
        return find_pair(name).title
    except ValueError:
        return name


def figure7(rows: Sequence[dict[str, Any]], path: str | Path | None = None, *, gpu: str = "",
            columns: int = 4) -> Any:
    """Draws Figure 7 from results rows; saves a PNG at ``path`` if given. Returns the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ordered_pairs(rows)
    if not names:
        raise ValueError("no results rows to plot")
    columns = max(1, min(columns, len(names)))
    nrows = math.ceil(len(names) / columns)
    fig, axes = plt.subplots(nrows, columns, figsize=(4.2 * columns, 3.3 * nrows), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, name in zip(axes.flat, names):
        pr = sorted((r for r in rows if r["pair"] == name and _finite(r.get("ratio"))), key=lambda r: r["ratio"])
        ax.axhline(0.0, color="black", linewidth=0.8)
        for column, label, marker, colour in METHODS:
            pts = [(r["ratio"], r[column]) for r in pr if _finite(r.get(column))]
            if not pts:
                continue
            xs, ys = zip(*pts)
            if marker in ("x", "_"):  # unfilled marker: colour only
                h = ax.scatter(xs, ys, marker=marker, s=36, label=label, c=colour, linewidths=1.2, zorder=3)
            else:
                hollow = column == "speedup_best_hfuse"
                h = ax.scatter(xs, ys, marker=marker, s=30, label=label, facecolors="none" if hollow else colour,
                               edgecolors=colour, linewidths=1.2, zorder=3)
            handles.setdefault(label, h)
            ax.axhline(sum(ys) / len(ys), color=colour, linestyle="--", linewidth=0.9, alpha=0.7)
        ax.set_xscale("log", base=2)
        ratios = [r["ratio"] for r in pr]
        if ratios:
            lo, hi = min(ratios + [0.25]), max(ratios + [4.0])
            ax.set_xlim(lo / 1.3, hi * 1.3)
        ax.set_title(_title(name), fontsize=10)
        ax.set_xlabel("execution-time ratio t1/t2", fontsize=8)
        ax.set_ylabel("speedup over native (%)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.25)
    for ax in list(axes.flat)[len(names):]:
        ax.remove()
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=len(handles),
               fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Kernel execution time speedup over native (two streams){' - ' + gpu if gpu else ''}",
                 fontsize=12)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=130)
    return fig


# ----------------------------------------------------------------------------- Figure 8
def _f(v: Any, spec: str = ".1f") -> str:
    return format(v, spec) if _finite(v) else "-"


def _cell(text: str, limit: int = 80) -> str:
    """One line of ``text``, safe inside a Markdown table cell."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit].replace("|", "/")


def figure8_markdown(metrics: dict[str, Any], *, gpu: str = "") -> str:
    """Figure 8 (fused kernels, N-RegCap and RegCap) and the paper's table of individual
    kernels, as Markdown, from metrics.json's content."""
    pairs = metrics.get("pairs") or {}
    names = [p.name for p in PAIRS if p.name in pairs] + sorted(set(pairs) - {p.name for p in PAIRS})
    out = [f"# Figure 8: metrics of the HFuse fused kernels{' on ' + gpu if gpu else ''}", ""]
    out.append("Representative size (execution-time ratio close to 1). Speedup over native (two streams), "
               "in %: `(native / fused - 1) * 100`. Issue slot utilisation of native: the paper's "
               "`(I1*C1 + I2*C2) / (C1 + C2)` over the two originals (C: elapsed cycles). Metrics from "
               "Nsight Compute (`--clock-control none`), see the mapping table below.")
    out.append("")
    out.append("| Pair | Type | Speedup (%) | Issue slot util. HFuse (%) | Issue slot util. native (%) | "
               "Mem. stall (%) | Occupancy (%) | Registers | Elapsed cycles |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        d = pairs[name]
        kernels = d.get("kernels") or {}
        timing = d.get("timing") or {}
        native = timing.get("native_ms")
        nat_issue = d.get("native_issue_slot_utilization")
        cap_label = (d.get("launch_info") or {}).get("cap")
        for variant, typ in (("nocap", "N-RegCap"), ("cap", f"RegCap ({cap_label})" if cap_label else "RegCap")):
            k = kernels.get(variant)
            paper = (k or {}).get("paper") or {}
            t = timing.get(f"{variant}_ms")
            sp = (native / t - 1.0) * 100.0 if (_finite(native) and _finite(t) and t > 0) else None
            if k is None and t is None:
                if d.get("error"):
                    note = "not measured: " + _cell(d["error"]) if variant == "nocap" else "-"
                else:
                    note = "no cap (paper's b0 < 2)" if variant == "cap" else "not measured"
                out.append(f"| {name} | {typ} | {note} | | | | | | |")
                continue
            out.append(f"| {name} | {typ} | {_f(sp, '+.1f')} | {_f(paper.get('issue_slot_utilization'), '.2f')} | "
                       f"{_f(nat_issue, '.2f')} | {_f(paper.get('stall_memory_dependency'), '.1f')} | "
                       f"{_f(paper.get('achieved_occupancy'), '.1f')} | {_f(paper.get('registers'), '.0f')} | "
                       f"{_f(paper.get('elapsed_cycles'), ',.0f')} |")
    out.append("")
    out.append("## Individual kernels (the paper's table of original kernels)")
    out.append("")
    out.append("| Kernel | Time alone (ms) | Issue slot util. (%) | Mem. stall (%) | Occupancy (%) | Registers | "
               "Elapsed cycles |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    seen = set()
    for name in names:
        d = pairs[name]
        try:
            kernels_of = find_pair(name).kernels
        except ValueError:
            continue
        for variant, key in zip(("k1", "k2"), kernels_of):
            if key in seen or variant not in (d.get("kernels") or {}):
                continue
            seen.add(key)
            paper = d["kernels"][variant].get("paper") or {}
            t = (d.get("timing") or {}).get(f"{variant}_ms")
            out.append(f"| {key} | {_f(t, '.3f')} | {_f(paper.get('issue_slot_utilization'), '.2f')} | "
                       f"{_f(paper.get('stall_memory_dependency'), '.1f')} | {_f(paper.get('achieved_occupancy'), '.1f')} | "
                       f"{_f(paper.get('registers'), '.0f')} | {_f(paper.get('elapsed_cycles'), ',.0f')} |")
    out.append("")
    from .metrics import mapping_markdown

    out.append("## Metric mapping (nvprof -> Nsight Compute)")
    out.append("")
    out.append(mapping_markdown())
    return "\n".join(out)


def draw_all(out_dir: str | Path, *, mode: str | None = None) -> dict[str, Path]:
    """Redraws figure7.png (from results.json) and figure8.md (from metrics.json) in
    ``out_dir``; returns what was written."""
    from .metrics import load_metrics
    from .suite import Results

    out = Path(out_dir)
    written: dict[str, Path] = {}
    results = Results.load(out)
    rows = results.select(mode)
    gpu = results.meta.get("gpu", "")
    if rows:
        import matplotlib.pyplot as plt

        fig = figure7(rows, out / "figure7.png", gpu=gpu)
        plt.close(fig)
        written["figure7"] = out / "figure7.png"
    metrics = load_metrics(out)
    if metrics.get("pairs"):
        path = out / "figure8.md"
        path.write_text(figure8_markdown(metrics, gpu=gpu or (metrics.get("meta") or {}).get("gpu", "")))
        written["figure8"] = path
    return written
