"""The benchmark suite end to end on a GPU: one deep-learning and one crypto pair, quick
tuner settings, small sizes, no Nsight Compute."""
from __future__ import annotations

import pytest

from hfuse.bench.pairs import find_pair

pytestmark = pytest.mark.gpu


def test_quick_suite_one_dl_one_crypto_pair(tmp_path):
    from hfuse.bench.suite import Results, run_suite, tune_settings
    from hfuse.tuning.plan import load_plan

    pairs = [find_pair("Hist+Maxpool"), find_pair("Blake256+SHA256")]
    sizes = {
        "Hist+Maxpool": [{"hist": 20_000_000, "maxpool": 8}],
        "Blake256+SHA256": [{"blake256": 1 << 18, "sha256": 1 << 17}],
    }
    try:
        import torch  # noqa: F401

        with_torch = True
    except ImportError:
        with_torch = False
    rows = run_suite(pairs, quick=True, out_dir=tmp_path, metrics=False, torch_baseline=with_torch,
                     progress=False, settings=tune_settings(True), sizes=sizes)
    res = Results.load(tmp_path)
    assert not res.errors, res.errors
    assert len(rows) == 2 and len(res.rows) == 2
    assert res.meta.get("gpu") and res.meta.get("driver")
    for row in rows:
        assert row["native_ms"] > 0 and row["graph_ms"] > 0 and row["t1_ms"] > 0 and row["t2_ms"] > 0
        assert row["naive_verified"] and row["vertical_verified"], (row["naive_error"], row["vertical_error"])
        assert row["naive_ms"] > 0 and row["vertical_ms"] > 0
        assert row["tuned_ms"] > 0
        if row["decision"] == "fuse":
            assert row["chosen_verified"] and row["chosen"]
        else:  # a declined point runs the fastest unfused way, whichever it was
            assert row["tuned_ms"] == row["best_unfused_ms"] <= row["native_ms"]
            assert row["best_unfused_way"] in ("serial", "two_streams", "graph", "co_resident")
        plan = load_plan(tmp_path / row["plan_file"])
        for c in plan.candidates:
            assert c.time is None or c.verified  # nothing timed unless verified first
    dl = next(r for r in rows if r["category"] == "dl")
    if with_torch:
        assert dl["torch_ms"] and dl["torch_ms"] > 0, dl["torch_error"]
        # torch.compile with combo kernels: timed, or the reason this PyTorch could not
        assert (dl["torch_compile_ms"] or 0) > 0 or dl["torch_compile_error"]
    # a second run is served from the tuner's cache and replaces, not duplicates, the rows
    run_suite(pairs[:1], quick=True, out_dir=tmp_path, metrics=False, torch_baseline=False,
              progress=False, settings=tune_settings(True), sizes=sizes)
    assert len(Results.load(tmp_path).rows) == 2
    from hfuse.bench.plots import draw_all

    assert "figure7" in draw_all(tmp_path)


def test_profile_one_variants_verify_and_time():
    from hfuse.bench.profile_one import build_variants, launch_once, verify_and_time

    pair = find_pair("Hist+Maxpool")
    v = build_variants(pair, {"hist": 5_000_000, "maxpool": 4}, None, with_references=True)
    assert {"k1", "k2", "nocap"} <= set(v.prepared)
    out = verify_and_time(v, warmup_ms=2, rep_ms=5)
    assert all(out["verified"].values()), out["errors"]
    assert out["native_ms"] > 0 and out["nocap_ms"] > 0
    assert launch_once(v, ["k1", "k2", "nocap", "cap"])[:3] == ["k1", "k2", "nocap"]
