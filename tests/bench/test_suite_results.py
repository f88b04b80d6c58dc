"""CPU tests of the benchmark suite's bookkeeping: pairs, rows from plans, results files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfuse.layouts import DYNAMIC, INTERLEAVED, VERTICAL, Dynamic
from hfuse.bench import suite
from hfuse.bench.pairs import PAIRS, find_pair, pair_sizes, select_pairs, thin
from hfuse.bench.suite import (
    ROW_FIELDS,
    Results,
    add_torch,
    read_csv_rows,
    row_from_plan,
)
from hfuse.bench.speedup import speedup_pct
from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.plan import Baselines, CandidateResult, Plan
from hfuse.registers import RegisterCap

DATA = Path(__file__).parent / "data"


def T(ms: float) -> Timing:
    return Timing(ms, ms, ms, ms, ms, 10)


def make_plan(decision: str = "fuse", *, naive_ok: bool = True) -> Plan:
    cands = [
        CandidateResult(Candidate(Fusion((Dim3(384), Dim3(384))), "naive"), T(2.2) if naive_ok else None,
                        registers=40, verified=naive_ok, error=None if naive_ok else "outputs differ from the unfused kernels: 3 of 10 elements differ"),
        CandidateResult(Candidate(Fusion((Dim3(256), Dim3(512)))), T(1.9), registers=48, verified=True),
        CandidateResult(Candidate(Fusion((Dim3(256), Dim3(512)), registers=RegisterCap(min_blocks=2))), T(1.6),
                        registers=32, verified=True, occupancy=0.75),
        CandidateResult(Candidate(Fusion((Dim3(512), Dim3(512)), VERTICAL)), T(3.0), registers=48, verified=True),
        CandidateResult(Candidate(Fusion((Dim3(512), Dim3(512)), DYNAMIC)), T(2.4), registers=48, verified=True),
        CandidateResult(Candidate(Fusion((Dim3(512), Dim3(512)), Dynamic((1, 2)))), T(2.1), registers=48, verified=True),
        CandidateResult(Candidate(Fusion((Dim3(512), Dim3(512)), INTERLEAVED)), None, error="outputs differ"),
        CandidateResult(Candidate(Fusion((Dim3(128), Dim3(640)))), None, error="compile failed: boom"),
    ]
    fuse = decision == "fuse"
    return Plan(
        kernels=["histogram", "maxpool2d_forward"], decision=decision, reason="test",
        chosen="hfuse 256+512 cap=b2" if fuse else None, speedup=2.0 / 1.6,
        blocks=[Dim3(256), Dim3(512)] if fuse else [], register_cap=RegisterCap(min_blocks=2) if fuse else None,
        grids=[Dim3(2112), Dim3(1056)] if fuse else [],
        candidates=cands,
        baselines=Baselines(alone={"hist": T(1.0), "maxpool": T(1.25)}, two_streams=T(2.0), graph=T(1.9)),
    )


# ----------------------------------------------------------------------------- pairs
def test_sixteen_pairs_in_paper_order():
    assert len(PAIRS) == 16
    assert [p.name for p in PAIRS][:4] == ["Batchnorm+Upsample", "Batchnorm+Hist", "Batchnorm+Im2Col",
                                           "Batchnorm+Maxpool"]
    assert [p.name for p in PAIRS][10:] == ["Blake2B+Ethash", "Blake256+Ethash", "Ethash+SHA256",
                                            "Blake256+Blake2B", "Blake256+SHA256", "Blake2B+SHA256"]
    assert sum(p.category == "dl" for p in PAIRS) == 10
    assert all(p.swept != "im2col" for p in PAIRS)  # Im2Col's input was fixed in the artifact
    assert find_pair("Hist+Maxpool").title == "Hist+*Maxpool*"
    assert find_pair("maxpool+hist").name == "Hist+Maxpool"
    assert find_pair("*Batchnorm*+Hist").swept == "batchnorm"


def test_select_pairs():
    assert len(select_pairs(None)) == 16
    assert len(select_pairs("dl")) == 10
    assert len(select_pairs("crypto")) == 6
    mixed = select_pairs("Ethash+SHA256,dl,hist+maxpool")
    assert len(mixed) == 11 and mixed[-1].name == "Ethash+SHA256"
    with pytest.raises(ValueError):
        select_pairs("Foo+Bar")


def test_sizes_quick_and_full():
    for p in PAIRS:
        quick = pair_sizes(p, quick=True)
        assert len(quick) == 1 and set(quick[0]) == set(p.kernels)
        full = pair_sizes(p, quick=False)
        assert len(full) >= 5
        fixed = {pt[p.fixed] for pt in full}
        assert len(fixed) == 1  # only the swept kernel varies
        swept = [pt[p.swept] for pt in full]
        assert swept == sorted(swept) and quick[0][p.swept] in swept  # representative size included
        assert swept[-1] / swept[0] >= 8  # spans about 1:4 .. 4:1 around the representative size
    assert thin([1, 2, 3, 4, 5, 6, 7, 8, 9], 3) == [1, 5, 9]
    assert thin([1, 2, 3], None) == [1, 2, 3]


# ----------------------------------------------------------------------------- rows
def test_row_from_plan_fuse():
    pair = find_pair("Hist+Maxpool")
    row = row_from_plan(pair, {"hist": 1000, "maxpool": 32}, make_plan("fuse"), mode="full")
    assert set(row) == set(ROW_FIELDS)
    assert row["ratio"] == pytest.approx(0.8)
    assert row["tuned_ms"] == pytest.approx(1.6)
    assert row["speedup_tuned"] == pytest.approx(25.0)
    assert row["speedup_naive"] == pytest.approx((2.0 / 2.2 - 1) * 100)
    assert row["speedup_vertical"] == pytest.approx((2.0 / 3.0 - 1) * 100)
    assert row["speedup_graph"] == pytest.approx((2.0 / 1.9 - 1) * 100)
    assert row["register_cap"] == "b2" and row["registers"] == 32 and row["chosen_blocks"] == "256+512"
    assert row["chosen_grids"] == "2112+1056"
    # each layout's fastest verified candidate, whatever its parameters; none where none verified
    assert row["dynamic_ms"] == pytest.approx(2.1) and row["dynamic_label"] == "dynamic:1:2"
    assert row["speedup_dynamic"] == pytest.approx((2.0 / 2.1 - 1) * 100)
    assert row["interleaved_ms"] is None and row["interblock_ms"] is None
    assert row["best_unfused_way"] == "graph" and row["speedup_best_unfused"] == pytest.approx((2.0 / 1.9 - 1) * 100)
    assert row["bound_ms"] is None and row["bound_unit"] == ""  # filled from units.json, not from the plan
    assert row["naive_verified"] and row["vertical_verified"] and row["chosen_verified"]
    assert row["candidates"] == 8 and row["verified_candidates"] == 6 and row["failed_candidates"] == 2
    assert row["swept_size"] == 32 and row["size_k1"] == 1000


def test_row_from_plan_do_not_fuse_and_failed_naive():
    pair = find_pair("Hist+Maxpool")
    row = row_from_plan(pair, {"hist": 1000, "maxpool": 32}, make_plan("do_not_fuse", naive_ok=False), mode="quick")
    # declined: what the launcher runs, the fastest unfused way (the graph here), not two streams
    assert row["tuned_ms"] == 1.9 and row["best_unfused_way"] == "graph" and row["best_unfused_ms"] == 1.9
    assert row["speedup_tuned"] == pytest.approx(speedup_pct(2.0, 1.9))
    assert row["chosen"] == "" and row["registers"] is None
    assert row["best_hfuse_ms"] == pytest.approx(1.6)  # what fusing would have given
    assert row["naive_ms"] is None and row["speedup_naive"] is None and not row["naive_verified"]
    assert row["naive_error"].startswith("outputs differ")


def test_speedup_and_torch_columns():
    assert speedup_pct(2.0, 1.0) == pytest.approx(100.0)
    assert speedup_pct(1.0, 2.0) == pytest.approx(-50.0)
    assert speedup_pct(None, 1.0) is None and speedup_pct(1.0, 0.0) is None
    row = {"native_ms": 2.0}
    add_torch(row, {"two_streams": T(4.0), "alone": [T(1.5), T(2.5)]})
    assert row["torch_ms"] == 4.0 and row["speedup_torch"] == pytest.approx(-50.0)
    assert (row["torch_t1_ms"], row["torch_t2_ms"]) == (1.5, 2.5)


# ----------------------------------------------------------------------------- files
def test_results_round_trip_and_merge(tmp_path):
    pair = find_pair("Hist+Maxpool")
    res = Results(meta={"gpu": "X"})
    r1 = row_from_plan(pair, {"hist": 1000, "maxpool": 32}, make_plan(), mode="full")
    r2 = row_from_plan(pair, {"hist": 1000, "maxpool": 64}, make_plan(), mode="full")
    res.add_row(r1)
    res.add_row(r2)
    res.add_error({"mode": "full", "pair": "Hist+Maxpool", "sizes": {"hist": 1000, "maxpool": 128}, "error": "x"})
    jpath, cpath = res.save(tmp_path)
    back = Results.load(tmp_path)
    assert len(back.rows) == 2 and back.meta["gpu"] == "X" and len(back.errors) == 1
    assert back.rows[0]["speedup_tuned"] == pytest.approx(25.0)
    csv_rows = read_csv_rows(cpath)
    assert len(csv_rows) == 2
    assert csv_rows[0]["size_k2"] == 32 and csv_rows[0]["naive_verified"] is True
    assert csv_rows[0]["ratio"] == pytest.approx(0.8)
    assert cpath.read_text().splitlines()[0].split(",") == list(ROW_FIELDS)
    # a re-measured point replaces its row; a success clears that point's error
    r2b = dict(r2, native_ms=5.0)
    back.add_row(r2b)
    back.add_row(row_from_plan(pair, {"hist": 1000, "maxpool": 128}, make_plan(), mode="full"))
    assert len(back.rows) == 3 and not back.errors
    assert [r["native_ms"] for r in back.rows if r["size_k2"] == 64] == [5.0]
    # NaN never reaches the JSON
    back.rows[0]["ratio"] = float("nan")
    back.save(tmp_path)
    assert json.loads(jpath.read_text())["rows"][0]["ratio"] is None


def test_sample_results_fixture_loads():
    res = Results.load(DATA / "sample_results.json")
    assert res.meta["gpu"].startswith("NVIDIA H100")
    assert {r["pair"] for r in res.rows} == {"Hist+Maxpool", "Batchnorm+Upsample", "Blake256+Blake2B", "Blake2B+Ethash"}
    for r in res.rows:
        assert set(ROW_FIELDS) <= set(r)
        if r["decision"] == "do_not_fuse":
            assert r["speedup_tuned"] == 0.0


def test_run_suite_records_errors_and_goes_on(tmp_path, monkeypatch):
    pairs = [find_pair("Hist+Maxpool"), find_pair("Blake256+SHA256")]
    calls = []

    def fake_measure(pair, sizes, **kw):
        calls.append(pair.name)
        if pair.name == "Hist+Maxpool":
            raise RuntimeError("out of memory")
        row = row_from_plan(pair, sizes, make_plan(), mode=kw["mode"], names=["hist", "maxpool"])
        row["elapsed_s"] = 1.0
        return row

    monkeypatch.setattr(suite, "measure_point", fake_measure)
    monkeypatch.setattr(suite, "nvidia_smi_clocks", lambda: {})

    class S:
        warmup_ms, rep_ms, flush_l2 = 1.0, 1.0, True

        def to_dict(self):
            return {"granularity": 256}

    rows = suite.run_suite(pairs, quick=True, out_dir=tmp_path, metrics=False, torch_baseline=False,
                           progress=False, settings=S())
    assert calls == ["Hist+Maxpool", "Blake256+SHA256"]
    assert len(rows) == 1
    res = Results.load(tmp_path)
    assert len(res.rows) == 1 and res.rows[0]["pair"] == "Blake256+SHA256" and res.rows[0]["mode"] == "quick"
    assert res.errors[0]["pair"] == "Hist+Maxpool" and "out of memory" in res.errors[0]["error"]
    assert res.meta["mode"] == "quick" and res.meta["settings"] == {"granularity": 256}
    assert (tmp_path / "results.csv").is_file()


def test_quick_tuner_settings():
    s = suite.tune_settings(True)
    assert (s.granularity, s.neighbour_caps, s.refine, s.warmup_ms, s.rep_ms) == (256, False, False, 10.0, 40.0)
    assert suite.tune_settings(False).granularity == 128


def test_scaled_sizes():
    p = find_pair("Hist+Maxpool")
    full = pair_sizes(p, quick=True)[0]
    half = pair_sizes(p, quick=True, scale=0.5)[0]
    assert half == {k: max(1, round(v * 0.5)) for k, v in full.items()}
