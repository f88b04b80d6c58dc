"""NVIDIA's compute-sanitizer: its command line, and its text log read back as findings.

The tools: ``memcheck`` (out-of-bounds and misaligned accesses), ``racecheck`` (shared
memory hazards between threads of a block), ``synccheck`` (barriers used wrongly:
divergent, or with mismatched counts) and ``initcheck`` (reads of global memory never
written). Kernel names are kept mangled (``--demangle no``) so that each finding can be
matched exactly to the symbol of a kernel we loaded.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from ..errors import HFuseError
from ..toolkit import find_cuda_tool

Tool = Literal["memcheck", "racecheck", "synccheck", "initcheck"]
TOOLS: tuple[Tool, ...] = ("memcheck", "racecheck", "synccheck", "initcheck")
Verdict = Literal["clean", "explained", "findings"]
"""``explained``: the fused kernel's findings are of kinds the original kernels show too."""


def find_sanitizer() -> str:
    """The compute-sanitizer executable: on ``PATH``, else in ``$CUDA_HOME/bin`` or ``/usr/local/cuda/bin``."""
    found = find_cuda_tool("compute-sanitizer")
    if found:
        return found
    raise HFuseError("compute-sanitizer was not found", hint="it comes with the CUDA toolkit: put its bin/ on PATH "
                     "or set CUDA_HOME")


def sanitizer_command(tool: Tool, log_file: str | Path, executable: str | None = None) -> list[str]:
    """The prefix that runs a command under ``tool``, writing every report to ``log_file``."""
    if tool not in TOOLS:
        raise HFuseError(f"unknown sanitizer tool '{tool}' (known: {', '.join(TOOLS)})")
    return [executable or find_sanitizer(), "--tool", tool, "--log-file", str(log_file), "--demangle", "no",
            "--print-limit", "100000"]


@dataclass(frozen=True)
class Finding:
    """Reports of one kind in one kernel, as the tool printed them."""

    tool: str
    kind: str
    """The report's headline without addresses and counts, e.g. ``Invalid __global__ write
    of size 4 bytes`` or ``Error: Race reported between Write access and Read access``."""
    symbol: str
    """The kernel's (mangled) symbol; empty for reports about host API calls."""
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        return cls(**data)


_PREFIX = "========="
_WHERE = re.compile(r"\s+at\s+(?:0x[0-9a-fA-F]+\s+in\s+)?([^\s+]+)\+0x[0-9a-fA-F]+")
_COUNTS = re.compile(r"\s*\[\d+ hazards?\]")
_SKIP = ("COMPUTE-SANITIZER", "SUMMARY", "Target application returned", "Saved host backtrace")


def parse_log(text: str, tool: str) -> list[Finding]:
    """The findings in a compute-sanitizer text log, grouped by kind and kernel."""
    blocks: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        line = raw[len(_PREFIX):]
        if not line.strip():
            continue
        if not line.startswith("  ") and not line.startswith("\t"):  # a headline starts a report
            if any(word in line for word in _SKIP):
                continue
            blocks.append([line.strip()])
        elif blocks:
            blocks[-1].append(line.strip())
    counts: Counter[tuple[str, str]] = Counter()
    for block in blocks:
        body = " ".join(l for l in block if not l.startswith("Host Frame"))
        where = _WHERE.search(" " + body)
        symbol = where.group(1) if where else ""
        # the headline, and racecheck's second line ("and Read access at ..."), without places
        kind = _COUNTS.sub("", _WHERE.sub("", " " + " ".join(block[:2] if block[1:2] and block[1].startswith("and ")
                                                              else block[:1]))).strip()
        counts[(kind, symbol)] += 1
    return [Finding(tool, kind, symbol, n) for (kind, symbol), n in sorted(counts.items())]


def summarise(findings: Sequence[Finding]) -> str:
    return "; ".join(f"{f.kind} ({f.count}x)" for f in findings) or "clean"


@dataclass
class SanitizerResult:
    """One tool's verdict on a fused kernel."""

    tool: str
    verdict: Verdict
    fused: list[Finding] = field(default_factory=list)
    originals: list[Finding] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    """What cannot be pinned to a kernel: host API errors, a worker that failed."""

    @property
    def note(self) -> str:
        if self.verdict == "clean":
            return "clean"
        if self.verdict == "explained":
            return f"explained: the original kernels show the same ({summarise(self.originals)})"
        return f"fused kernel: {summarise(self.fused)}" + (f"; {'; '.join(self.other)}" if self.other else "")

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "verdict": self.verdict, "fused": [f.to_dict() for f in self.fused],
                "originals": [f.to_dict() for f in self.originals], "other": list(self.other)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SanitizerResult":
        return cls(tool=data["tool"], verdict=data["verdict"], fused=[Finding.from_dict(f) for f in data.get("fused", [])],
                   originals=[Finding.from_dict(f) for f in data.get("originals", [])], other=list(data.get("other", [])))


def judge(tool: str, findings: Sequence[Finding], fused_symbol: str, original_symbols: Sequence[str],
          other: Sequence[str] = ()) -> SanitizerResult:
    """Sorts a log's findings by kernel and gives the verdict (a pure function)."""
    fused = [f for f in findings if f.symbol == fused_symbol]
    originals = [f for f in findings if f.symbol in original_symbols]
    rest = [f"{f.kind} in {f.symbol or 'a host API call'} ({f.count}x)" for f in findings
            if f.symbol != fused_symbol and f.symbol not in original_symbols]
    other = [*other, *rest]
    if not fused and not other:
        verdict: Verdict = "clean"
    elif not other and {f.kind for f in fused} <= {f.kind for f in originals}:
        verdict = "explained"
    else:
        verdict = "findings"
    return SanitizerResult(tool, verdict, fused, originals, other)


def verdict_of(results: Sequence[SanitizerResult]) -> Verdict:
    """The worst verdict over tools."""
    order: list[Verdict] = ["clean", "explained", "findings"]
    return max((r.verdict for r in results), key=order.index, default="clean")
