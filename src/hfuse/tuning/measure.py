"""Verifying and timing on the GPU, in whichever process runs the kernels.

``Measurer`` holds the tuning inputs (device arrays, in ``ArrayTable`` order), the unfused
kernels' reference outputs and a timer. It is given ``LaunchJob``s and answers with
baselines and ``CandidateResult``s; it knows nothing of sources or of the search. The
tuner runs it in a worker process (``isolation.WorkerMeasurer``, the default) or in its
own (``TuneSettings.isolate = False``).

Before each step that waits on the GPU it names the step through ``phase``, so that a
supervisor can give each its own time limit.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import HFuseError
from ..runtime.compile import Compiler
from ..runtime.binary import KernelResources, LaunchError
from ..runtime.device import DeviceLimits, require_gpu
from ..runtime.execute import OutputSnapshot, PreparedLaunch, compare_outputs, run_once_on_device
from ..runtime.jobs import LaunchJob, prepare_job
from ..runtime.occupancy import occupancy
from ..runtime.symbols import SymbolError
from ..runtime.timing import ConcurrentLaunches, LaunchGraph, SerialLaunches, Timer, Timing
from .candidates import Candidate
from .plan import Baselines, CandidateResult

Phase = Callable[[str], None]
"""Told the step about to wait on the GPU: ``unfused``, ``reference``, ``verify``, ``time``, ``run``."""


@dataclass(frozen=True)
class MeasureSettings:
    limits: DeviceLimits
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    flush_l2: bool = True


@dataclass(frozen=True)
class MeasureRequest:
    """Verify and time one fused candidate."""

    candidate: Candidate
    fused: LaunchJob
    references: tuple[LaunchJob, ...]
    """The unfused kernels at the candidate's block shapes, in kernel order: their outputs
    (from the same initial contents) are what the fused kernel must reproduce."""
    entry_registers: int | None = None
    """Per-part budgets (``setmaxnreg``) add up only if the kernel has exactly this many
    registers per thread on entry: checked before it runs."""
    timed: bool = True
    """False: verify only (``verify``), no timing."""


@dataclass(frozen=True)
class CoResidentRequest:
    """Verify and time the unfused kernels with other grids, one set per ``k``."""

    originals: tuple[LaunchJob, ...]
    """At their own grids: the reference outputs."""
    by_k: dict[int, tuple[LaunchJob, ...]]


@dataclass(frozen=True)
class CoResidentReport:
    timings: dict[int, Timing]
    errors: dict[int, str]
    """Why a ``k`` has no timing (outputs differ, or it failed)."""


@dataclass(frozen=True)
class UnfusedReport:
    baselines: Baselines
    resources: tuple[KernelResources, ...]
    """Each original kernel's registers and shared memory, as the driver loaded it."""


def context_usable() -> bool:
    """False once a kernel fault (illegal address, trap, ...) has poisoned this process's
    CUDA context: every later call returns the same error."""
    cupy = require_gpu()
    try:
        cupy.cuda.runtime.deviceSynchronize()
        cupy.empty(1, dtype=cupy.uint8).fill(0)
        cupy.cuda.runtime.deviceSynchronize()
        return True
    except Exception:
        return False


def expected_of(references: Sequence[tuple[LaunchJob, Sequence[Any]]]) -> list[Any]:
    """What a fused kernel must give, from what each original gave (``run_once_on_device``:
    its outputs, then its device variables): every part's outputs, then every part's
    variables, as the fused launch lists them (``PreparedLaunch.compared``)."""
    return ([o for job, got in references for o in got[:len(job.outputs)]]
            + [v for job, got in references for v in got[len(job.outputs):]])


class Measurer:
    """Runs jobs on this process's GPU against one set of tuning inputs."""

    def __init__(self, arrays: Sequence[Any], outputs: Sequence[Any], settings: MeasureSettings,
                 phase: Phase | None = None, compiler: Compiler | None = None):
        self.cupy = require_gpu()
        self.arrays = list(arrays)
        self.settings = settings
        self.phase: Phase = phase or (lambda _name: None)
        # loads cubins (compiling is the tuner's); shared by the measurers of one worker
        self.compiler = compiler or Compiler(limits=settings.limits)
        self.timer = Timer(settings.limits, flush_l2=settings.flush_l2)
        self.snapshot = OutputSnapshot(outputs)
        self.broken = False
        """Set when a kernel fault lost the CUDA context: nothing more can run here."""
        self._references: OrderedDict[tuple[int, Any], list] = OrderedDict()
        # Reference outputs stay on the GPU (host comparison of gigabytes is too slow), but
        # only up to a quarter of its memory: least recently used ones are recomputed.
        self._reference_budget = self.cupy.cuda.Device().mem_info[1] // 4
        # CuPy compiles its copy and comparison kernels on first use, per dtype: seconds
        # that must not count against a candidate's run limit. Restore once here; compare
        # each kind of output once before its first candidate (``_warm_comparison``).
        self.snapshot.restore()
        self.cupy.cuda.runtime.deviceSynchronize()
        self._compared: set[tuple[str, str]] = set()

    def prepare(self, job: LaunchJob) -> PreparedLaunch:
        return prepare_job(job, self.compiler, self.arrays)

    def time(self, fn: Callable[[], None]) -> Timing:
        s = self.settings
        return self.timer.time(fn, warmup_ms=s.warmup_ms, rep_ms=s.rep_ms, setup=None)

    def resume(self, baselines: Baselines) -> None:
        """Nothing to do here: this process has no time limits."""

    # -- the unfused kernels ---------------------------------------------------------
    def unfused(self, originals: Sequence[LaunchJob]) -> UnfusedReport:
        """Each kernel alone, and the unfused ways to run them all: two streams, a graph, serial."""
        prepared = [self.prepare(job) for job in originals]
        self.phase("unfused")
        alone: dict[str, Timing] = {}
        for launch in prepared:
            name = launch.name
            while name in alone:
                name += "'"
            alone[name] = self.time(lambda p=launch: p())
        concurrent, serial, graph = ConcurrentLaunches(prepared), SerialLaunches(prepared), LaunchGraph(prepared)
        baselines = Baselines(alone=alone, two_streams=self.time(lambda: concurrent()),
                              graph=self.time(lambda: graph()), serial=self.time(lambda: serial()))
        return UnfusedReport(baselines, tuple(p.kernel.resources for p in prepared))

    def co_resident(self, request: CoResidentRequest) -> CoResidentReport:
        """For each ``k``: its kernels on streams of their own, once each against the
        reference outputs (a grid-stride kernel must not depend on its grid), then timed."""
        timings: dict[int, Timing] = {}
        errors: dict[int, str] = {}
        for k, jobs in request.by_k.items():
            try:
                launches = [self.prepare(job) for job in jobs]
                problems = []
                for i, (launch, original) in enumerate(zip(launches, request.originals)):
                    if launch.grid != original.grid:
                        expected = self.reference(i, original)
                        self.phase("verify")
                        problems += compare_outputs(expected, run_once_on_device(launch, self.snapshot), launch.compared)
                if problems:
                    errors[k] = "outputs differ from the full grids': " + "; ".join(problems[:2])
                    continue
                self.phase("time")
                together = ConcurrentLaunches(launches)
                timings[k] = self.time(lambda: together())
            except (LaunchError, HFuseError) as err:
                errors[k] = str(err)
                if not context_usable():
                    self.broken = True
                    break
        return CoResidentReport(timings, errors)

    def reference(self, index: int, job: LaunchJob) -> list:
        """Outputs of the ``index``-th unfused kernel at the job's block shape, from the initial outputs."""
        key = (index, job.block)
        if key in self._references:
            self._references.move_to_end(key)
            return self._references[key]
        launch = self.prepare(job)
        self.phase("reference")
        outputs = run_once_on_device(launch, self.snapshot)
        self._references[key] = outputs
        while len(self._references) > 1 and sum(a.nbytes for v in self._references.values() for a in v) > self._reference_budget:
            self._references.popitem(last=False)
        return outputs

    # -- candidates ------------------------------------------------------------------
    def measure(self, request: MeasureRequest) -> CandidateResult:
        """Runs the candidate once and compares its outputs with the originals'; times it
        only if they agree. A fault that loses the context is reported as ``crashed``."""
        result = CandidateResult(request.candidate)
        try:
            launch = self.prepare(request.fused)
            res = launch.kernel.resources
            result.registers, result.local_bytes, result.static_smem = res.registers, res.local_bytes, res.static_smem
            result.spill_stores, result.spill_loads = res.spill_stores, res.spill_loads
            occ = occupancy(self.settings.limits, res.registers, launch.block.size, res.static_smem, launch.shared_mem)
            result.occupancy, result.blocks_per_sm = occ.occupancy, occ.blocks_per_sm
            if request.entry_registers is not None and res.registers != request.entry_registers:
                result.error = (f"the kernel has {res.registers} registers per thread on entry, not the "
                                f"{request.entry_registers} its setmaxnreg budgets assume: not run")
                result.failure = "launch"
                return result
            expected = expected_of([(job, self.reference(i, job)) for i, job in enumerate(request.references)])
            self._warm_comparison(expected, launch.compared)
            self.phase("verify")
            problems = compare_outputs(expected, run_once_on_device(launch, self.snapshot), launch.compared)
            if problems:
                result.error = "outputs differ from the unfused kernels: " + "; ".join(problems[:3])
                result.failure = "mismatch"
                return result
            result.verified = True
            if request.timed:
                self.phase("time")
                result.time = self.time(lambda: launch())
        except SymbolError:
            raise  # the user's symbol data, the same for every candidate: say so once, loudly
        except (LaunchError, HFuseError) as err:
            self._failed(result, str(err))
        except Exception as err:  # CuPy's CUDA errors from a synchronise inside the timing loop
            if context_usable():
                raise
            self._failed(result, f"{type(err).__name__}: {err}")
        return result

    def _warm_comparison(self, expected: Sequence[Any], outputs: Sequence[Any]) -> None:
        new = [(e, o) for e, o in zip(expected, outputs) if (str(e.dtype), o.compare) not in self._compared]
        if new:
            self.phase("load")
            compare_outputs([e for e, _ in new], [e for e, _ in new], [o for _, o in new])
            self._compared.update((str(e.dtype), o.compare) for e, o in new)

    def _failed(self, result: CandidateResult, error: str) -> None:
        result.verified, result.time, result.error = False, None, error
        result.failure = "launch"
        if not context_usable():
            result.failure = "crashed"
            self.broken = True

    def run_once(self, jobs: Sequence[LaunchJob]) -> None:
        """Each job once, from the initial outputs (for a sanitizer watching this process)."""
        for job in jobs:
            launch = self.prepare(job)
            self.phase("run")
            try:
                run_once_on_device(launch, self.snapshot)
            except Exception:
                self.broken = not context_usable()
                raise
