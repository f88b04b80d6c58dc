"""Measurements given as data: a measurement backend without a GPU.

``RecordedBackend`` answers the tuner's questions (how fast are the unfused kernels, is
this candidate right, how fast is it) from a ``Recording`` instead of running anything.
Everything else is real: the front end, generation and NVRTC compiles (they run on the
CPU), the search, the decision, the caches, the batch machinery. It serves

- tests of all of that on a machine without a GPU (``pytest``, CI);
- replays of a GPU run: ``Recording.from_plans`` takes the measurements out of plans a
  GPU run wrote, and the same requests tuned against it must reach the same decisions.

A request is found by its tuning cache key (a recording of plans: the same sources,
inputs, settings and GPU), else by its name (its launches' names joined with ``+``: a
recording written by hand); a candidate by its label. Resources (registers, spills, static shared memory) come from ptxas's report
of the binary just compiled, as the driver would report them. A candidate the recording
does not have is never verified: it is recorded as not run, and so never chosen.
"""
from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import HFuseError
from ..runtime.binary import KernelResources
from ..runtime.device import DeviceLimits
from ..runtime.jobs import LaunchJob
from ..runtime.occupancy import occupancy
from ..runtime.ptxas import find_resources
from ..runtime.timing import Timing
from .backends import Measuring, SessionInputs
from .measure import CoResidentReport, CoResidentRequest, MeasureRequest, UnfusedReport
from .plan import Baselines, CandidateResult, Plan


@dataclass(frozen=True)
class RecordedRun:
    """What became of one candidate when it ran: its time if verified, else why not."""

    time: Timing | None = None
    verified: bool = True
    failure: str | None = None
    error: str | None = None

    @classmethod
    def timed(cls, ms: float) -> "RecordedRun":
        return cls(Timing.of([ms]))

    @classmethod
    def of(cls, result: CandidateResult) -> "RecordedRun":
        return cls(result.time, result.verified, result.failure, result.error)

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time.to_dict() if self.time else None, "verified": self.verified,
                "failure": self.failure, "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RecordedRun":
        return cls(Timing.from_dict(data.get("time")), bool(data.get("verified", True)), data.get("failure"),
                   data.get("error"))


@dataclass(frozen=True)
class RecordedRequest:
    """One request's measurements: its baselines, and candidates by label."""

    baselines: Baselines
    candidates: Mapping[str, RecordedRun] = field(default_factory=dict)
    co_resident: Mapping[int, Timing] = field(default_factory=dict)
    """Co-resident streams by blocks per SM (none: that baseline was not measured)."""


@dataclass(frozen=True)
class Recording:
    limits: DeviceLimits
    requests: Mapping[str, RecordedRequest]

    @classmethod
    def from_plans(cls, limits: DeviceLimits, plans: Sequence[Plan]) -> "Recording":
        """The measurements of plans a GPU run wrote (on the GPU ``limits`` describes), by
        their cache keys."""
        out = {}
        for plan in plans:
            name = plan.cache_key
            if not name:
                raise HFuseError("a plan without its cache key cannot be found again in a recording")
            co_resident = {plan.baselines.co_resident_k: plan.baselines.co_resident} \
                if plan.baselines.co_resident is not None and plan.baselines.co_resident_k is not None else {}
            out[name] = RecordedRequest(plan.baselines, {r.label: RecordedRun.of(r) for r in plan.candidates},
                                        co_resident)
        return cls(limits, out)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu": asdict(self.limits), "requests": {
            name: {"baselines": r.baselines.to_dict(),
                   "candidates": {label: c.to_dict() for label, c in r.candidates.items()},
                   "co_resident": {str(k): t.to_dict() for k, t in r.co_resident.items()}}
            for name, r in self.requests.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Recording":
        requests = {
            name: RecordedRequest(Baselines.from_dict(r["baselines"]),
                                  {label: RecordedRun.from_dict(c) for label, c in r.get("candidates", {}).items()},
                                  {int(k): Timing(**t) for k, t in r.get("co_resident", {}).items()})
            for name, r in data["requests"].items()}
        return cls(DeviceLimits(**data["gpu"]), requests)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Recording":
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise HFuseError(f"{path}: not a recording of measurements ({type(err).__name__}: {err})") from err


def _resources(job: LaunchJob) -> KernelResources:
    """A kernel's resources as ptxas reported them for its binary."""
    report = find_resources(job.binary.ptxas, job.binary.symbol(job.name_expression))
    if report is None:
        raise HFuseError(f"no ptxas report for '{job.name}' in its compile log: its resources are unknown")
    return KernelResources(registers=report.registers, local_bytes=report.stack_frame, static_smem=report.static_smem,
                           const_bytes=report.cmem, max_threads_per_block=1024, binary_version=0,
                           spill_stores=report.spill_stores, spill_loads=report.spill_loads,
                           stack_frame=report.stack_frame)


@dataclass
class RecordedMeasurer:
    """The ``Measurer`` interface, answered from one request's recording."""

    recorded: RecordedRequest
    limits: DeviceLimits
    measured: list[str] = field(default_factory=list)
    """The labels asked for, in order (what a real measurer would have run)."""

    def unfused(self, originals: Sequence[LaunchJob]) -> UnfusedReport:
        return UnfusedReport(self.recorded.baselines, tuple(_resources(job) for job in originals))

    def resume(self, baselines: Baselines) -> None:
        """Nothing runs here: nothing to limit."""

    def co_resident(self, request: CoResidentRequest) -> CoResidentReport:
        timings = {k: t for k, t in self.recorded.co_resident.items() if k in request.by_k}
        return CoResidentReport(timings, {k: "not in the recording" for k in request.by_k if k not in timings})

    def measure(self, request: MeasureRequest) -> CandidateResult:
        self.measured.append(request.candidate.label)
        recorded = self.recorded.candidates.get(request.candidate.label)
        if recorded is None:
            return CandidateResult(request.candidate, error="not in the recording: not run", failure="launch")
        if not recorded.verified:
            return CandidateResult(request.candidate, error=recorded.error or "recorded as not verified",
                                   failure=recorded.failure or "mismatch")  # type: ignore[arg-type]
        res = _resources(request.fused)
        occ = occupancy(self.limits, res.registers, request.fused.block.size, res.static_smem, request.fused.shared_mem)
        return CandidateResult(request.candidate, time=recorded.time if request.timed else None, registers=res.registers,
                               local_bytes=res.local_bytes, spill_stores=res.spill_stores, spill_loads=res.spill_loads,
                               static_smem=res.static_smem, occupancy=occ.occupancy, blocks_per_sm=occ.blocks_per_sm,
                               verified=True)


@dataclass
class RecordedBackend:
    """A ``MeasureBackend`` that measures nothing: every answer comes from ``recording``."""

    recording: Recording
    sessions: list[RecordedMeasurer] = field(default_factory=list)
    """Every session opened, with what it was asked (for tests and reports)."""

    def device_limits(self) -> DeviceLimits:
        return self.recording.limits

    @contextlib.contextmanager
    def open(self, inputs: SessionInputs) -> Iterator[Measuring]:
        recorded = self.recording.requests.get(inputs.key) or self.recording.requests.get(inputs.name)
        if recorded is None:
            raise HFuseError(f"the recording has no request '{inputs.name}'",
                             hint=f"it has: {', '.join(self.recording.requests) or '(none)'}")
        measurer = RecordedMeasurer(recorded, self.recording.limits)
        self.sessions.append(measurer)
        yield measurer
