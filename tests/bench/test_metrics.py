"""CPU tests of the Nsight Compute side: the metric mapping, the CSV parser, the command."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from hfuse.layouts import HORIZONTAL
from hfuse.bench.metrics import (
    NCU_METRICS,
    NVPROF_TO_NCU,
    by_variant,
    find_plan,
    kernel_regex,
    mapping_markdown,
    match_variant,
    metric_rows,
    native_issue,
    ncu_command,
    parse_ncu_csv,
    parse_number,
    save_metrics,
    load_metrics,
    to_base_unit,
)
from hfuse.bench.pairs import find_pair
from hfuse.bench.profile_one import fused_names, kernel_names, parse_sizes, format_sizes

DATA = Path(__file__).parent / "data"


def test_mapping_table_matches_the_docs():
    m = {x.nvprof: x.ncu for x in NVPROF_TO_NCU}
    assert m["issue_slot_utilization"] == "smsp__issue_active.avg.pct_of_peak_sustained_active"
    assert m["achieved_occupancy"] == "sm__warps_active.avg.pct_of_peak_sustained_active"
    assert m["stall_memory_dependency"] == "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct"
    assert m["elapsed_cycles_pm"] == "sm__cycles_elapsed.max"
    assert len(set(NCU_METRICS)) == len(NCU_METRICS)
    md = mapping_markdown()
    assert md.count("\n") == len(NVPROF_TO_NCU) + 2 and "`sm__cycles_elapsed.max`" in md


def test_numbers_and_units():
    assert parse_number("1,234,567") == 1234567.0
    assert parse_number('"45.60"') == 45.6
    assert parse_number("n/a") is None and parse_number("") is None and parse_number(None) is None
    assert to_base_unit(2.5, "Mcycle") == (2.5e6, "cycle")
    assert to_base_unit(3.0, "Kbyte") == (3000.0, "byte")
    assert to_base_unit(1.5, "msecond") == (1.5e6, "nsecond")
    assert to_base_unit(12.0, "usecond") == (12000.0, "nsecond")
    assert to_base_unit(45.0, "%") == (45.0, "%")
    assert to_base_unit(30.0, "register/thread") == (30.0, "register/thread")
    assert to_base_unit(None, "cycle") == (None, "cycle")


def test_parse_details_page():
    kernels = parse_ncu_csv((DATA / "ncu_details.csv").read_text())
    assert [k.id for k in kernels] == [0, 1, 2, 3]
    hist, maxpool, nocap, cap = kernels
    assert hist.kernel.startswith("histogram(")
    assert hist.block == "(512, 1, 1)"
    p = hist.paper()
    assert p["issue_slot_utilization"] == pytest.approx(21.57)
    assert p["stall_memory_dependency"] == pytest.approx(12.05)
    assert p["achieved_occupancy"] == pytest.approx(93.41)
    assert p["elapsed_cycles"] == 2994403.0
    assert p["duration_ns"] == 1512224.0 and p["registers"] == 18
    assert maxpool.paper()["elapsed_cycles"] == pytest.approx(3.57e6)  # Mcycle scaled back
    assert maxpool.paper()["duration_ns"] == pytest.approx(1803520.0)  # usecond with a comma
    assert nocap.paper()["stall_memory_dependency"] is None  # n/a
    assert nocap.paper()["duration_ns"] == pytest.approx(2.41e6)
    assert cap.paper()["elapsed_cycles"] == pytest.approx(4500500.0)  # "4,500.5" Kcycle


def test_parse_raw_page_with_units_row():
    kernels = parse_ncu_csv((DATA / "ncu_raw.csv").read_text())
    assert [k.kernel for k in kernels] == ["blake256_search", "ethash_search"]
    b, e = kernels
    assert b.paper()["duration_ns"] == pytest.approx(2015100.0)
    assert b.paper()["elapsed_cycles"] == 3801222.0 and b.paper()["registers"] == 64
    assert e.paper()["stall_memory_dependency"] == pytest.approx(96.1)
    assert e.units["sm__cycles_elapsed.max"] == "cycle"


def test_parse_garbage():
    assert parse_ncu_csv("") == []
    assert parse_ncu_csv("==PROF== nothing\n==ERROR== ERR_NVGPUCTRPERM\n") == []


def test_variant_matching():
    pair = find_pair("Hist+Maxpool")
    names = kernel_names(pair)
    assert names["k1"] == "histogram" and names["k2"] == "maxpool2d_forward"
    assert names["nocap"] == "histogram_maxpool2d_forward__hfused_nocap" and names["cap"].endswith("_cap")
    assert match_variant("histogram(const float *, unsigned int *)", names) == "k1"
    assert match_variant("void histogram_maxpool2d_forward__hfused_cap(int)", names) == "cap"
    assert match_variant("histogram_maxpool2d_forward__hfused_nocap", names) == "nocap"
    assert match_variant("cupy_random_kernel", names) is None
    found = by_variant(parse_ncu_csv((DATA / "ncu_details.csv").read_text()), names)
    assert set(found) == {"k1", "k2", "nocap", "cap"}


def test_kernel_regex_is_exact():
    rx = re.compile(kernel_regex(["histogram", "im2col"]))
    assert rx.search("histogram") and rx.search("histogram(const float *, int)") and rx.search("void im2col(int)")
    assert not rx.search("histogram_im2col__hfused_cap")
    assert not rx.search("my_histogram2")


def test_ncu_command():
    pair = find_pair("Blake2B+Ethash")
    cmd = ncu_command(pair, {"blake2b": 4096, "ethash": 1024}, plan_file="p.json",
                      variants=["k1", "k2", "nocap", "cap"], ncu="/opt/ncu", python="python3")
    text = " ".join(cmd)
    assert cmd[0] == "/opt/ncu"
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--metrics") + 1] == ",".join(NCU_METRICS)
    assert "--csv" in cmd and "--target-processes" in cmd and cmd[cmd.index("--launch-count") + 1] == "4"
    assert cmd[cmd.index("--kernel-name") + 1].startswith("regex:")
    assert "-m hfuse.bench.profile_one --pair Blake2B+Ethash" in text
    assert "--sizes blake2b=4096,ethash=1024" in text and "--plan p.json" in text
    assert parse_sizes(format_sizes({"blake2b": 4096, "ethash": 1024})) == {"blake2b": 4096, "ethash": 1024}
    assert fused_names(pair)["nocap"] == "blake2b_search_ethash_search__hfused_nocap"


def test_native_issue_formula():
    # the paper: I = (I1*C1 + I2*C2) / (C1 + C2)
    assert native_issue(10.0, 100.0, 40.0, 300.0) == pytest.approx(32.5)
    assert native_issue(None, 1.0, 2.0, 3.0) is None


def test_metrics_files_and_plan_lookup(tmp_path):
    import json

    data = json.loads((DATA / "sample_metrics.json").read_text())
    rows = metric_rows(data["pairs"])
    assert [r["variant"] for r in rows] == ["k1", "k2", "nocap", "cap"]
    cap = rows[-1]
    assert cap["speedup_pct"] == pytest.approx((2.9 / 2.3 - 1) * 100) and cap["cap"] == "b2"
    assert rows[0]["speedup_pct"] is None
    save_metrics(tmp_path, data)
    assert load_metrics(tmp_path)["pairs"].keys() == data["pairs"].keys()
    assert (tmp_path / "metrics.csv").read_text().count("\n") == 5

    pair = find_pair("Hist+Maxpool")
    sizes = {"hist": 10, "maxpool": 3}
    assert find_plan(pair, sizes, [tmp_path]) is None
    (tmp_path / "quick__hist+maxpool__hist-10__maxpool-3.json").write_text("{}")
    assert find_plan(pair, sizes, [tmp_path]).name.startswith("quick__")
    (tmp_path / "full__hist+maxpool__hist-10__maxpool-3.json").write_text("{}")
    assert find_plan(pair, sizes, [tmp_path]).name.startswith("full__")


def test_suite_plan_path_agrees_with_find_plan(tmp_path):
    from hfuse.bench.suite import plan_path

    pair = find_pair("Ethash+SHA256")
    sizes = {"ethash": 5, "sha256": 7}
    p = plan_path(tmp_path, "quick", pair, sizes)
    p.parent.mkdir(parents=True)
    p.write_text("{}")
    assert find_plan(pair, sizes, [tmp_path / "plans"]) == p


def test_collect_pair_with_a_recorded_ncu(tmp_path):
    """The subprocess path, with a stand-in 'ncu' that prints recorded output."""
    import stat

    from hfuse.bench.metrics import collect_pair

    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\necho 'fake ncu' >&2\ncat '{DATA / 'ncu_details.csv'}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    pair = find_pair("Hist+Maxpool")
    entry = collect_pair(pair, {"hist": 10, "maxpool": 3}, plan_file=None, work_dir=tmp_path, ncu=str(fake),
                         time_variants=False)
    assert "error" not in entry, entry.get("error")
    assert set(entry["kernels"]) == {"k1", "k2", "nocap", "cap"}
    assert entry["kernels"]["k2"]["paper"]["stall_memory_dependency"] == pytest.approx(87.61)
    assert entry["native_issue_slot_utilization"] == pytest.approx(
        (21.57 * 2994403 + 9.12 * 3.57e6) / (2994403 + 3.57e6))
    assert entry["ncu_command"].startswith(str(fake) + " --clock-control none")
    # ncu failing (no counters permission): recorded, not raised
    fake.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM' \nexit 1\n")
    entry = collect_pair(pair, {"hist": 10, "maxpool": 3}, plan_file=None, work_dir=tmp_path, ncu=str(fake),
                         time_variants=False)
    assert "ERR_NVGPUCTRPERM" in entry["error"] and entry["ncu_returncode"] == 1


def test_choose_partition_from_plan():
    from hfuse.bench.profile_one import choose_partition
    from hfuse.launch import KernelLaunch
    from hfuse.runtime.timing import Timing
    from hfuse.spec import Dim3, KernelSpec
    from hfuse.fusion import Fusion
    from hfuse.tuning.candidates import Candidate
    from hfuse.tuning.plan import CandidateResult, Plan
    from hfuse.registers import RegisterCap

    def T(ms):
        return Timing(ms, ms, ms, ms, ms, 3)

    launches = [KernelLaunch(KernelSpec("a.cu", "a", 512, tunable=True), [], [], Dim3(10)),
                KernelLaunch(KernelSpec("b.cu", "b", 256, tunable=True), [], [], Dim3(10))]
    assert choose_partition(None, launches).blocks == (Dim3(384), Dim3(384))
    c1 = CandidateResult(Candidate(Fusion((Dim3(256), Dim3(512)))), T(2.0), verified=True)
    c2 = CandidateResult(Candidate(Fusion((Dim3(512), Dim3(256)), registers=RegisterCap(min_blocks=2))), T(1.5), verified=True)
    c3 = CandidateResult(Candidate(Fusion((Dim3(128), Dim3(640)))), None, error="x")
    declined = Plan(kernels=["a", "b"], decision="do_not_fuse", reason="", candidates=[c1, c2, c3])
    part = choose_partition(declined, launches)
    assert part.blocks == (Dim3(512), Dim3(256)) and part.cap == RegisterCap(min_blocks=2)
    assert "declined" in part.source
    fused = Plan(kernels=["a", "b"], decision="fuse", reason="", candidates=[c1, c2], chosen=c1.label,
                 blocks=[Dim3(256), Dim3(512)], layout=HORIZONTAL)
    part = choose_partition(fused, launches)
    assert part.blocks == (Dim3(256), Dim3(512)) and part.cap is None and "tuned" in part.source
