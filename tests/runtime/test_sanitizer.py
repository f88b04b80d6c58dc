"""compute-sanitizer's logs read back as findings per kernel, and the verdict on a fusion."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.runtime.sanitizer import Finding, SanitizerResult, judge, parse_log, sanitizer_command, verdict_of

LOGS = Path(__file__).parent / "data" / "sanitizer"  # as compute-sanitizer 2025.3 wrote them on an H100


def test_each_tools_reports_are_counted_per_kind_and_kernel():
    race = parse_log((LOGS / "racecheck.log").read_text(), "racecheck")
    assert race == [Finding("racecheck", "Error: Race reported between Write access and Write access", "racy", 1)]
    oob = parse_log((LOGS / "memcheck.log").read_text(), "memcheck")
    assert oob == [Finding("memcheck", "Invalid __global__ write of size 4 bytes", "oob", 3)]
    uninit = parse_log((LOGS / "initcheck.log").read_text(), "initcheck")
    assert uninit == [Finding("initcheck", "Uninitialized __global__ memory read of size 4 bytes", "uninit", 3)]


def test_a_clean_log_has_no_findings():
    clean = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
    assert parse_log(clean, "memcheck") == []


def test_reports_about_api_calls_have_no_kernel():
    log = ('========= COMPUTE-SANITIZER\n========= Program hit cudaErrorIllegalAddress (error 700) due to "an illegal '
           'memory access was encountered" on CUDA API call to cudaDeviceSynchronize.\n'
           '=========     Saved host backtrace up to driver entry point at error\n'
           '=========         Host Frame: cuCtxSynchronize [0x1] in libcuda.so.1\n')
    [finding] = parse_log(log, "memcheck")
    assert finding.symbol == "" and finding.kind.startswith("Program hit cudaErrorIllegalAddress")


def test_the_verdict_compares_the_fused_kernel_with_the_originals():
    race = "Error: Race reported between Write access and Read access"
    findings = [Finding("racecheck", race, "_Z5fusedv", 2), Finding("racecheck", race, "_Z4origv", 1)]
    explained = judge("racecheck", findings, "_Z5fusedv", ["_Z4origv", "_Z5otherv"])
    assert explained.verdict == "explained" and "the original kernels show the same" in explained.note
    added = judge("racecheck", findings[:1], "_Z5fusedv", ["_Z4origv"])
    assert added.verdict == "findings" and race in added.note
    assert judge("memcheck", [], "_Z5fusedv", ["_Z4origv"]).verdict == "clean"
    # a worker that failed is never clean, even with an empty log
    assert judge("memcheck", [], "_Z5fusedv", [], other=["fused: the worker died"]).verdict == "findings"
    assert verdict_of([explained, added]) == "findings" and verdict_of([]) == "clean"


def test_results_round_trip_through_json_data():
    result = judge("racecheck", [Finding("racecheck", "k", "_Z5fusedv", 2)], "_Z5fusedv", [])
    assert SanitizerResult.from_dict(result.to_dict()) == result


def test_the_command_names_the_tool_and_keeps_symbols_mangled():
    command = sanitizer_command("synccheck", "/tmp/log", executable="/cuda/bin/compute-sanitizer")
    assert command[:3] == ["/cuda/bin/compute-sanitizer", "--tool", "synccheck"]
    assert "--demangle" in command and command[command.index("--demangle") + 1] == "no"
    with pytest.raises(HFuseError, match="unknown sanitizer tool"):
        sanitizer_command("leakcheck", "/tmp/log", executable="x")
