"""The tuner's answer as data: what to launch, why, and the evidence (JSON round trip).

A ``Plan`` says "fuse with this partition, cap and launch configuration" or "do not
fuse" with the reason, and keeps every candidate's measurement, the unfused baselines,
and where it was measured (GPU, driver, date, hfuse version, source hash), so a program
can load it and a person can check it.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..frontend.options import NO_OPTIONS, CompileOptions
from ..fusion import Fusion
from ..layouts import HORIZONTAL, Layout, layout_of
from ..runtime.sanitizer import SanitizerResult
from ..runtime.timing import Timing
from ..spec import Dim3
from .candidates import Candidate
from ..registers import RegisterPolicy, register_policy_from_dict


Decision = Literal["fuse", "do_not_fuse"]
Failure = Literal["compile", "launch", "mismatch", "timeout", "crashed"]
"""Why a candidate was not verified: NVRTC refused it; it could not be loaded or launched;
its outputs differ from the unfused kernels'; it ran past its time limit (a deadlock, or
far slower than the originals); it faulted and took its CUDA context down."""
UnfusedWay = Literal["serial", "two_streams", "graph", "co_resident"]
"""How the original kernels run unfused: one after another on one stream, on two streams
forked from and joined to the caller's, as a CUDA graph with parallel branches, or on two
streams with grid-stride kernels cut to k blocks per SM so that all stay resident."""
PLAN_FORMAT = 1


def hfuse_version() -> str:
    try:
        from importlib.metadata import version

        return version("hfuse")
    except Exception:
        return "unknown"


def _dim(value: Dim3 | None) -> list[int] | None:
    return None if value is None else list(value.as_tuple())


def _undim(value: Any) -> Dim3 | None:
    return None if value is None else Dim3.of(value)


@dataclass
class CandidateResult:
    """One candidate as measured (or why it was not)."""

    candidate: Candidate
    time: Timing | None = None
    registers: int | None = None
    local_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    static_smem: int | None = None
    occupancy: float | None = None
    blocks_per_sm: int | None = None
    verified: bool = False
    error: str | None = None
    failure: Failure | None = None
    """Set with ``error`` when the candidate was not verified."""

    @property
    def label(self) -> str:
        return self.candidate.label

    @property
    def time_ms(self) -> float | None:
        return self.time.median_ms if self.time else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["candidate"] = self.candidate.to_dict()
        data["time"] = self.time.to_dict() if self.time else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CandidateResult":
        data = dict(data)
        data["candidate"] = Candidate.from_dict(data["candidate"])
        data["time"] = Timing.from_dict(data.get("time"))
        return cls(**data)


@dataclass
class Baselines:
    """The unfused references, each kernel's ``alone`` keyed by its launch name."""

    alone: dict[str, Timing] = field(default_factory=dict)
    two_streams: Timing | None = None
    graph: Timing | None = None
    serial: Timing | None = None
    """All kernels one after another on one stream."""
    co_resident: Timing | None = None
    """On streams of their own, each grid-stride kernel with ``co_resident_k`` blocks per SM
    (the fastest verified k; ``coresident``); None when no kernel is grid-stride."""
    co_resident_k: int | None = None
    co_resident_grids: list[Dim3] = field(default_factory=list)
    """The grids of that measurement, per kernel."""

    def ways(self) -> dict[UnfusedWay, Timing]:
        """The unfused ways that were measured."""
        found = {"serial": self.serial, "two_streams": self.two_streams, "graph": self.graph,
                 "co_resident": self.co_resident}
        return {way: t for way, t in found.items() if t is not None}  # type: ignore[misc]

    def fastest_way(self) -> UnfusedWay:
        """The quickest unfused way measured (two streams, hfuse's native, when none was)."""
        ways = self.ways()
        return min(ways, key=lambda w: ways[w].median_ms) if ways else "two_streams"

    def to_dict(self) -> dict[str, Any]:
        return {
            "alone": {k: v.to_dict() for k, v in self.alone.items()},
            "two_streams": self.two_streams.to_dict() if self.two_streams else None,
            "graph": self.graph.to_dict() if self.graph else None,
            "serial": self.serial.to_dict() if self.serial else None,
            "co_resident": self.co_resident.to_dict() if self.co_resident else None,
            "co_resident_k": self.co_resident_k,
            "co_resident_grids": [_dim(g) for g in self.co_resident_grids],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Baselines":
        data = data or {}
        return cls(
            alone={k: Timing(**v) for k, v in (data.get("alone") or {}).items()},
            two_streams=Timing.from_dict(data.get("two_streams")),
            graph=Timing.from_dict(data.get("graph")),
            serial=Timing.from_dict(data.get("serial")),
            co_resident=Timing.from_dict(data.get("co_resident")),
            co_resident_k=data.get("co_resident_k"),
            co_resident_grids=[Dim3.of(g) for g in data.get("co_resident_grids") or []],
        )


@dataclass
class Plan:
    """What to launch for a set of kernels on one GPU, and the evidence for it."""

    kernels: list[str]
    """The kernels' instance names (e.g. ``hist<float, 4>``), in fusion order."""
    decision: Decision
    reason: str
    layout: Layout = HORIZONTAL
    """How the fused kernel lays out its parts (written as its spec, under "layout"; "strategy" in older plans)."""
    blocks: list[Dim3] = field(default_factory=list)
    """Each kernel's block inside the fused block (the partition); unfused, its own block."""
    register_cap: RegisterPolicy | None = None
    fused_block: Dim3 | None = None
    grid: Dim3 | None = None
    """The fused launch's grid."""
    grids: list[Dim3] = field(default_factory=list)
    """Each kernel's own grid (in the fused launch, or unfused)."""
    shared_mem: int = 0
    """Dynamic shared memory of the fused launch, bytes."""
    smems: list[int] = field(default_factory=list)
    """Each kernel's own dynamic shared memory, bytes (the fused launch's slices)."""
    smem_alignments: list[int] = field(default_factory=list)
    """Where each kernel's slice must start (``PartSignature.smem_align``; empty: 16 bytes)."""
    chosen: str | None = None
    """Label of the chosen candidate (None when not fusing)."""
    speedup: float | None = None
    """The fastest unfused way's time (``baselines.fastest_way()``) over the fastest verified
    fusion's: above 1 + min_gain the plan fuses."""
    fused_name: str = ""
    """The fused kernel's name expression in ``fused_source`` (empty when not fusing)."""
    fused_source: str = ""
    """The chosen fused kernel's complete CUDA source (as ``hfuse fuse`` writes it)."""
    unfused_sources: list[str] = field(default_factory=list)
    """Each original kernel's device side (``hfuse.device_source``): what the launcher runs
    when the plan does not fuse."""
    unfused_names: list[str] = field(default_factory=list)
    """Each original kernel's name expression in its ``unfused_sources`` entry."""
    candidates: list[CandidateResult] = field(default_factory=list)
    baselines: Baselines = field(default_factory=Baselines)
    gpu: str = ""
    driver: str = ""
    cuda_runtime: str = ""
    date: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    hfuse_version: str = field(default_factory=hfuse_version)
    source_hash: str = ""
    cache_key: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    symbols: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    """Per kernel (plan order): the ``__constant__``/``__device__`` symbols it was tuned with,
    name -> ``{"dtype", "shape", "bytes"}`` (never the data); ``hfuse.launcher(plan, symbols=...)``
    must be given data for each. Empty: no kernel was given symbol data."""
    symbol_names: list[dict[str, str]] = field(default_factory=list)
    """Per kernel: its symbols that ``fused_source`` renames (two inputs define one name),
    the user's name -> the fused name (``FusedKernel.symbol_names``); empty: none renamed."""
    options: CompileOptions = NO_OPTIONS
    """The ``-I/-D/-U/-include/-std`` and device arch the sources were fused under; the
    launcher compiles ``fused_source`` with them again."""
    sanitizer: list[SanitizerResult] = field(default_factory=list)
    """compute-sanitizer's verdict per tool on the fused kernel (``hfuse tune --sanitize``,
    ``hfuse check``); empty: not checked."""
    format: int = PLAN_FORMAT

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "kernels": list(self.kernels),
            "decision": self.decision,
            "reason": self.reason,
            "layout": self.layout.spec,
            "blocks": [_dim(b) for b in self.blocks],
            "register_cap": self.register_cap.to_dict() if self.register_cap else None,
            "fused_block": _dim(self.fused_block),
            "grid": _dim(self.grid),
            "grids": [_dim(g) for g in self.grids],
            "shared_mem": self.shared_mem,
            "smems": list(self.smems),
            "smem_alignments": list(self.smem_alignments),
            "chosen": self.chosen,
            "speedup": self.speedup,
            "fused_name": self.fused_name,
            "candidates": [c.to_dict() for c in self.candidates],
            "baselines": self.baselines.to_dict(),
            "gpu": self.gpu,
            "driver": self.driver,
            "cuda_runtime": self.cuda_runtime,
            "date": self.date,
            "hfuse_version": self.hfuse_version,
            "source_hash": self.source_hash,
            "cache_key": self.cache_key,
            "settings": self.settings,
            "symbols": [{n: dict(d) for n, d in s.items()} for s in self.symbols],
            "symbol_names": [dict(m) for m in self.symbol_names],
            "options": self.options.to_dict(),
            "sanitizer": [r.to_dict() for r in self.sanitizer],
            "fused_source": self.fused_source,
            "unfused_names": list(self.unfused_names),
            "unfused_sources": list(self.unfused_sources),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Plan":
        if data.get("format", PLAN_FORMAT) > PLAN_FORMAT:
            raise ValueError(f"plan format {data['format']} is newer than this hfuse understands ({PLAN_FORMAT})")
        return cls(
            kernels=list(data["kernels"]),
            decision=data["decision"],
            reason=data.get("reason", ""),
            layout=layout_of(data.get("layout", data.get("strategy", "horizontal"))),  # "strategy": older plans
            blocks=[Dim3.of(b) for b in data.get("blocks", [])],
            register_cap=register_policy_from_dict(data.get("register_cap")),
            fused_block=_undim(data.get("fused_block")),
            grid=_undim(data.get("grid")),
            grids=[Dim3.of(g) for g in data.get("grids", [])],
            shared_mem=int(data.get("shared_mem", 0)),
            smems=[int(v) for v in data.get("smems", [])],
            smem_alignments=[int(v) for v in data.get("smem_alignments", [])],
            chosen=data.get("chosen"),
            speedup=data.get("speedup"),
            fused_name=data.get("fused_name", ""),
            fused_source=data.get("fused_source", ""),
            unfused_sources=list(data.get("unfused_sources") or []),
            unfused_names=list(data.get("unfused_names") or []),
            candidates=[CandidateResult.from_dict(c) for c in data.get("candidates", [])],
            baselines=Baselines.from_dict(data.get("baselines")),
            gpu=data.get("gpu", ""),
            driver=data.get("driver", ""),
            cuda_runtime=data.get("cuda_runtime", ""),
            date=data.get("date", ""),
            hfuse_version=data.get("hfuse_version", ""),
            source_hash=data.get("source_hash", ""),
            cache_key=data.get("cache_key"),
            settings=dict(data.get("settings") or {}),
            symbols=[{n: dict(d) for n, d in s.items()} for s in data.get("symbols") or []],
            symbol_names=[dict(m) for m in data.get("symbol_names") or []],
            options=CompileOptions.from_dict(data.get("options")),
            sanitizer=[SanitizerResult.from_dict(r) for r in data.get("sanitizer") or []],
            format=int(data.get("format", PLAN_FORMAT)),
        )

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> Path:
        """Writes the plan's JSON (whole or not at all); an unwritable path is an ``HFuseError``."""
        from ..files import write_output

        return write_output(path, self.to_json() + "\n", "plan")

    @property
    def should_fuse(self) -> bool:
        return self.decision == "fuse"

    @property
    def fusion(self) -> Fusion | None:
        """The winning fusion (None when the plan does not fuse)."""
        if not self.should_fuse:
            return None
        return next((r.candidate.fusion for r in self.candidates if r.label == self.chosen), None)

    @property
    def unfused_way(self) -> UnfusedWay:
        """How the launcher runs the originals when the plan does not fuse: the fastest measured."""
        return self.baselines.fastest_way()


def load_plan(path: str | Path) -> Plan:
    return Plan.from_json(Path(path).read_text())
