"""CPU tests of the figures and tables, on recorded sample results."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from hfuse.bench.plots import draw_all, figure7, figure8_markdown, ordered_pairs  # noqa: E402
from hfuse.bench.report import PAPER_FIG8, headline, pair_summary, report_markdown, gmean_pct  # noqa: E402
from hfuse.bench.suite import Results  # noqa: E402

DATA = Path(__file__).parent / "data"


@pytest.fixture
def rows():
    return Results.load(DATA / "sample_results.json").rows


def test_figure7_panels(rows, tmp_path):
    import matplotlib.pyplot as plt

    path = tmp_path / "fig7.png"
    fig = figure7(rows, path, gpu="H100")
    try:
        assert path.is_file() and path.stat().st_size > 10_000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        axes = fig.get_axes()
        titles = [ax.get_title() for ax in axes]
        assert titles == ["*Batchnorm*+Upsample", "Hist+*Maxpool*", "*Blake2B*+Ethash", "*Blake256*+Blake2B"]
        for ax in axes:
            assert ax.get_xscale() == "log"
            assert "speedup" in ax.get_ylabel()
        labels = {t.get_text() for t in fig.legends[0].get_texts()}
        assert {"HFuse (tuned)", "Naive HFuse", "VFuse", "CUDA graph", "PyTorch 2 streams"} <= labels
        # PyTorch markers only in the deep-learning panels: 6 series there, 5 in crypto ones
        n_series = [len(ax.collections) for ax in axes]
        assert n_series[0] == n_series[1] == 6 and n_series[2] == n_series[3] == 5
    finally:
        plt.close(fig)


def test_figure7_grid_for_sixteen(rows, tmp_path):
    import matplotlib.pyplot as plt

    from hfuse.bench.pairs import PAIRS

    many = []
    for p in PAIRS:
        for r in rows[:2]:
            many.append(dict(r, pair=p.name))
    fig = figure7(many, tmp_path / "f.png")
    try:
        assert len(fig.get_axes()) == 16
        assert fig.get_axes()[0].get_title() == "*Batchnorm*+Upsample"
        assert fig.get_axes()[-1].get_title() == "*Blake2B*+SHA256"
    finally:
        plt.close(fig)


def test_figure7_needs_rows():
    with pytest.raises(ValueError):
        figure7([])


def test_ordered_pairs(rows):
    assert ordered_pairs(rows)[0] == "Batchnorm+Upsample"


def test_figure8_markdown():
    import json

    metrics = json.loads((DATA / "sample_metrics.json").read_text())
    md = figure8_markdown(metrics, gpu="H100")
    lines = md.splitlines()
    assert lines[0].startswith("# Figure 8")
    nocap = next(l for l in lines if l.startswith("| Hist+Maxpool | N-RegCap"))
    cells = [c.strip() for c in nocap.strip("|").split("|")]
    assert cells[2] == f"{(2.9 / 2.4 - 1) * 100:+.1f}"
    assert cells[3] == "19.80" and cells[5] == "-" and cells[6] == "71.4" and cells[7] == "32"
    native = (21.57 * 2994403 + 9.12 * 3570000) / (2994403 + 3570000)
    assert cells[4] == f"{native:.2f}"
    assert any(l.startswith("| Hist+Maxpool | RegCap (b2)") for l in lines)
    assert any(l.startswith("| Blake256+Blake2B | N-RegCap | not measured") for l in lines)
    assert any(l.startswith("| hist | 1.500 |") for l in lines)
    assert "smsp__issue_active.avg.pct_of_peak_sustained_active" in md


def test_report_numbers(rows):
    summary = {s["pair"]: s for s in pair_summary(rows)}
    assert summary["Hist+Maxpool"]["tuned_avg"] > 1 and summary["Hist+Maxpool"]["paper_winner"]
    assert summary["Blake256+Blake2B"]["tuned_avg"] == 0.0
    assert summary["Blake256+Blake2B"]["paper_v100"] == PAPER_FIG8["Blake256+Blake2B"]["V100"]
    h = headline(rows)
    assert h["pairs_beating_native"] == 2 and set(h["winners"]) == {"Hist+Maxpool", "Blake2B+Ethash"}
    assert h["worst_tuned_pct"] == pytest.approx(0.0)
    assert h["comparisons"]["torch"]["points"] == 6
    assert gmean_pct([100.0, 0.0]) == pytest.approx((2 ** 0.5 - 1) * 100)
    md = report_markdown(rows, meta={"gpu": "H100"})
    assert "| Hist+Maxpool (paper: wins) |" in md and "## Headline" in md
    assert len(PAPER_FIG8) == 16


def test_draw_all_and_cli_plots_only(tmp_path):
    shutil.copy(DATA / "sample_results.json", tmp_path / "results.json")
    shutil.copy(DATA / "sample_metrics.json", tmp_path / "metrics.json")
    written = draw_all(tmp_path)
    assert set(written) == {"figure7", "figure8"}
    (tmp_path / "figure7.png").unlink()
    from hfuse.cli import main

    assert main(["bench", "--plots-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "figure7.png").is_file()
    assert (tmp_path / "figure8.md").is_file()
    assert (tmp_path / "report_numbers.md").read_text().startswith("# hfuse bench: numbers")
