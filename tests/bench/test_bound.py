"""The resource bound: its arithmetic, filling results rows, and profiling through ncu
(a stand-in ``ncu`` script that knows only some metrics, as an older Nsight Compute would)."""
from __future__ import annotations

import json
import stat
import sys
import textwrap

import pytest

from hfuse.bench.bound import (
    ALONE,
    UNITS,
    add_bounds,
    captured,
    collect_units,
    parse_launches,
    profile_units,
    resource_bound,
    unit_key,
)
from hfuse.bench.report import as_fast_as_every_strategy, bound_table


def test_the_issue_example_is_set_by_the_alu_pipe():
    # SHA256 keeps the ALU pipe 95% busy for 1.98 ms, Ethash 15% for 1.94 ms
    bound = resource_bound([1.98, 1.94], [{"alu": 0.95, "dram": 0.01}, {"alu": 0.15, "dram": 0.40}])
    assert bound.unit == "alu" and bound.ms == pytest.approx(0.95 * 1.98 + 0.15 * 1.94)


def test_a_slow_kernel_alone_sets_the_bound_when_units_are_idle():
    bound = resource_bound([3.0, 0.5], [{"alu": 0.2}, {"alu": 0.3, "dram": 0.9}])
    assert bound == type(bound)(3.0, ALONE)
    with pytest.raises(ValueError):
        resource_bound([1.0], [])


def test_gain_taken():
    assert captured(3.0, 2.5, 2.0) == pytest.approx(0.5)
    assert captured(3.0, 3.0, 2.0) == 0.0 and captured(3.0, 2.0, 2.0) == 1.0
    assert captured(2.0, 1.9, 2.0) is None  # nothing to gain: the best unfused way is at the bound
    assert captured(None, 1.0, 0.5) is None


def _row(**kw):
    row = {"pair": "Ethash+SHA256", "k1": "ethash", "k2": "sha256", "size_k1": 409600, "size_k2": 13000000,
           "t1_ms": 1.94, "t2_ms": 1.98, "native_ms": 3.9, "best_unfused_ms": 3.3, "tuned_ms": 2.5, "ratio": 0.98}
    row.update(kw)
    return row


def test_rows_get_the_bound_of_their_own_sizes():
    units = {unit_key("ethash", 409600): {"utilisation": {"alu": 0.15}},
             unit_key("sha256", 13000000): {"utilisation": {"alu": 0.95}}}
    rows = [_row(), _row(size_k2=6500000)]
    assert add_bounds(rows, units) == 1  # the second size was not profiled: no bound rather than a wrong one
    first = rows[0]
    assert first["bound_unit"] == "alu" and first["bound_ms"] == pytest.approx(2.172)
    assert first["captured"] == pytest.approx((3.3 - 2.5) / (3.3 - 2.172))
    assert first["speedup_bound"] == pytest.approx((3.9 / 2.172 - 1) * 100)
    assert "bound_ms" not in rows[1]
    table = bound_table(rows)
    assert len(table) == 3 and "| Ethash+SHA256 |" in table[2] and "| alu |" in table[2]


def test_as_fast_as_every_strategy_within_one_percent():
    row = _row(tuned_ms=2.52, best_hfuse_ms=2.50, vertical_ms=2.6, dynamic_ms=None, serial_ms=3.9)
    assert as_fast_as_every_strategy(row)  # 2.52 <= 2.50 * 1.01
    assert not as_fast_as_every_strategy({**row, "interleaved_ms": 2.40})
    assert not as_fast_as_every_strategy(_row(tuned_ms=None))


def test_launch_lists():
    assert parse_launches("ethash=409600, SHA256=1.3e7,") == [("ethash", 409600), ("sha256", 13000000)]


FAKE_NCU = textwrap.dedent('''\
    import sys
    args = sys.argv[1:]
    metrics = args[args.index("--metrics") + 1].split(",")
    unknown = [m for m in metrics if "pipe_adu" in m]
    if unknown:
        print("==ERROR== Failed to find metric " + unknown[0], file=sys.stderr)
        sys.exit(1)
    launches = args[args.index("--launch") + 1].split(",")
    print('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"')
    for i, item in enumerate(launches):
        kernel = {"ethash": "ethash_search", "sha256": "sha256_search"}[item.split("=")[0]]
        for m in metrics:
            unit, value = ("nsecond", "1,940,000") if m.startswith("gpu__time") else ("%", str(10 + i))
            print(f'"{i}","{kernel}(const unsigned int *)","{m}","{unit}","{value}"')
''')


@pytest.fixture
def fake_ncu(tmp_path):
    script = tmp_path / "ncu"
    script.write_text(f"#!{sys.executable}\n" + FAKE_NCU)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_profiling_drops_metrics_this_ncu_does_not_know(fake_ncu):
    found = profile_units(fake_ncu, [("ethash", 409600), ("ethash", 819200)])
    assert found["dropped_metrics"] == ["sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_elapsed"]
    first, second = found["kernels"][unit_key("ethash", 409600)], found["kernels"][unit_key("ethash", 819200)]
    assert first["duration_ns"] == 1.94e6 and first["utilisation"]["alu"] == pytest.approx(0.10)
    assert second["utilisation"]["dram"] == pytest.approx(0.11) and "adu" not in second["utilisation"]
    assert len(first["utilisation"]) == len(UNITS) - 1


def test_collect_units_profiles_each_size_once_and_saves(fake_ncu, tmp_path):
    class Quiet:
        def print(self, *a, **k):
            pass

    rows = [_row(), _row(size_k1=819200)]
    data = collect_units(rows, out_dir=tmp_path, console=Quiet(), ncu=fake_ncu)
    assert sorted(data["kernels"]) == sorted([unit_key("ethash", 409600), unit_key("ethash", 819200),
                                              unit_key("sha256", 13000000)])
    saved = json.loads((tmp_path / "units.json").read_text())
    assert saved["kernels"] == data["kernels"] and saved["meta"]["clock_control"] == "none"
