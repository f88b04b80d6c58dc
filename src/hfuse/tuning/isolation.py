"""Candidates measured in a worker process, under time limits.

A fused kernel that deadlocks on a barrier never returns, and one that faults leaves a
sticky error that ends its CUDA context. So the tuner does not run candidates in its own
process: a ``GpuWorker`` starts ``python -m hfuse.tuning.worker``, which has a context of
its own, and keeps it for as long as it is used: one per GPU, shared by every tuning
session there (a batch's requests), each session's inputs given once (a host image,
``runtime.transfer``, or a recipe the worker makes them from) and dropped when it ends.
``WorkerMeasurer`` is one session's view of it: it sends one request at a time.

Each step the worker announces (``measure.Phase``) gets a time limit (``TimeLimits``); a
worker that overruns it is killed and the candidate recorded as ``timeout``; one that
dies, or reports that its context is lost, is recorded as ``crashed`` (one that dies
without a word is first replaced and the candidate measured once more: something else
may have killed it). The next request starts a fresh worker. The caller's own context is never
touched by a candidate, and Ctrl-C (or any exception) kills the worker on the way out.

The worker runs in a session of its own, so a Ctrl-C in the terminal reaches only the
tuner, which stops it; it also exits by itself if the tuner's process goes away. A
command ``prefix`` (e.g. ``compute-sanitizer --tool racecheck``) runs it under a tool.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Sequence

from ..errors import HFuseError
from ..runtime.jobs import LaunchJob
from ..runtime.transfer import ArrayLayout, ArrayRef, HostImage
from .measure import CoResidentReport, CoResidentRequest, MeasureRequest, MeasureSettings, UnfusedReport
from .plan import Baselines, CandidateResult


@dataclass(frozen=True)
class TimeLimits:
    """How long each step of a worker may take before it is deemed hung (seconds).

    A single run of a candidate (``verify``, ``reference``) may take ``run_factor`` times
    the slowest original kernel alone, and never less than ``run_floor_s``: a correct
    fused kernel does at most the originals' work, so far beyond it is a deadlock.
    Timing runs a candidate for about ``warmup_ms + rep_ms`` plus a few runs more.
    """

    start_s: float = 300.0
    """Starting the worker and uploading the inputs."""
    unfused_s: float = 900.0
    """Measuring the user's own kernels (their runtime is not known yet)."""
    load_s: float = 120.0
    """Loading a module and copying symbol data."""
    run_factor: float = 20.0
    run_floor_s: float = 2.0
    scale: float = 1.0
    """Everything times this (a sanitizer slows kernels down a hundredfold)."""

    def run_s(self, slowest_ms: float | None) -> float:
        return max(self.run_floor_s, self.run_factor * (slowest_ms or 0.0) / 1000.0)

    def for_phase(self, phase: str, slowest_ms: float | None, settings: MeasureSettings) -> float:
        run = self.run_s(slowest_ms)
        limit = {
            "start": self.start_s,
            "unfused": self.unfused_s,
            "load": self.load_s,
            "reference": run,
            "verify": run,
            "run": run,
            # the first and estimating runs, then warm-up and repetitions (at least ten)
            "time": 16 * run + 2 * (settings.warmup_ms + settings.rep_ms) / 1000.0 + self.run_floor_s,
        }.get(phase, self.load_s)
        return limit * self.scale


@dataclass(frozen=True)
class WorkerSetup:
    """What a fresh worker is given before any request."""

    image: HostImage | None
    """The inputs' bytes (None when they are made from ``recipe``)."""
    outputs: tuple[ArrayRef, ...]
    """Every array a kernel writes: restored to its initial contents before each run."""
    settings: MeasureSettings
    recipe: Any = None
    """How to make the inputs in the worker instead (``batch.inputs``: ``.launches()``)."""
    layout: ArrayLayout = ()
    """The tuner's inputs' layout (``describe_arrays``), which the recipe's must match."""


class WorkerTimeout(HFuseError):
    """The worker overran a step's time limit and was killed."""


class WorkerCrashed(HFuseError):
    """The worker died (or lost its CUDA context) during a request."""


class WorkerShutDown(BaseException):
    """The worker was shut down (Ctrl-C, the batch stopping) while a request waited on it:
    nothing happened to the candidate, so nothing about it may be recorded. Not an
    ``Exception``: it passes every handler that records a candidate's failure."""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


@dataclass
class _Worker:
    process: subprocess.Popen
    connection: Connection
    log: Path
    inputs: set[str] = field(default_factory=set)
    """The input sets this process has loaded (by id)."""
    busy: bool = False
    """A request is under way (an interrupted wait leaves it so): stopping means killing."""


@dataclass
class GpuWorker:
    """One worker process for one GPU, shared by every tuning session that measures there.

    It is started on the first call and kept: modules it loaded stay loaded, and each
    session's inputs are uploaded once (``setup``) and dropped when the session ends
    (``release``), so a batch of requests pays for a worker once, not per request. Calls
    are serialised (one kernel on the GPU at a time, as timing needs); a worker that hangs
    or dies is replaced on the next call, which first uploads that call's inputs again.
    """

    prefix: Sequence[str] = ()
    """A command the worker runs under (a sanitizer), or nothing; ``{worker}`` in it is
    replaced by the worker's number (a log file per worker)."""
    module: str = "hfuse.tuning.worker"
    """The worker's module, run as ``python -m MODULE FD PARENT_PID``."""
    workers_started: int = 0
    _worker: _Worker | None = None
    _setups: dict[str, WorkerSetup] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _log_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="hfuse-worker-"))
    _next_id: int = 0
    _shut_down: bool = False

    def __post_init__(self) -> None:
        # the workers' logs outlive a close (a closed worker starts again on the next call)
        weakref.finalize(self, shutil.rmtree, self._log_dir, True)

    def add(self, setup: WorkerSetup) -> str:
        """Registers a session's inputs; they are uploaded on its first call."""
        with self._lock:
            self._next_id += 1
            inputs = f"inputs-{self._next_id}"
            self._setups[inputs] = setup
            return inputs

    def release(self, inputs: str) -> None:
        """Drops a session's inputs (in the worker too, if it has them)."""
        with self._lock:
            setup = self._setups.pop(inputs, None)
            worker = self._worker
            if setup is not None and worker is not None and inputs in worker.inputs and worker.process.poll() is None:
                worker.inputs.discard(inputs)
                try:
                    worker.connection.send(("release", inputs, None))
                    self._answer(worker, "load", TimeLimits(), None, setup.settings)
                except (OSError, WorkerTimeout, WorkerCrashed, HFuseError):
                    self._stop(kill=True)

    def call(self, inputs: str, method: str, argument: Any, limits: TimeLimits, slowest_ms: float | None) -> Any:
        """``method(argument)`` on ``inputs`` in the worker, under ``limits``."""
        with self._lock:
            if self._shut_down:
                raise WorkerShutDown()
            setup = self._setups[inputs]
            if self._worker is not None and self._worker.process.poll() is not None:
                self._stop()  # it exited after its last answer (a lost context): start afresh
            worker = self._worker or self._start(setup)
            if inputs not in worker.inputs:
                self._load(worker, inputs, setup, limits)
            try:
                worker.connection.send((method, inputs, argument))
            except OSError:  # it exited between the check and the send
                self._stop(kill=True)
                worker = self._start(setup)
                self._load(worker, inputs, setup, limits)
                worker.connection.send((method, inputs, argument))
            worker.busy = True
            value = self._answer(worker, method, limits, slowest_ms, setup.settings)
            worker.busy = False
            return value

    def close(self) -> None:
        """Stops the worker process (a later call starts another)."""
        with self._lock:
            self._stop()

    def shut_down(self) -> None:
        """Stops for good, at once, even while a request waits on the worker (from another
        thread): that request, and every later one, raises ``WorkerShutDown``."""
        self._shut_down = True
        worker = self._worker
        if worker is not None:
            try:
                os.killpg(worker.process.pid, signal.SIGKILL)
            except OSError:
                pass
        with self._lock:
            self._stop(kill=True)

    def __enter__(self) -> "GpuWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the process -----------------------------------------------------------------
    def _answer(self, worker: _Worker, phase: str, limits: TimeLimits, slowest_ms: float | None,
                settings: MeasureSettings) -> Any:
        limit = limits.for_phase(phase, slowest_ms, settings)
        while True:
            try:
                ready = worker.connection.poll(limit)
            except (OSError, EOFError):
                ready = True
            if self._shut_down:
                raise WorkerShutDown()
            if not ready:
                self._stop(kill=True)
                raise WorkerTimeout(f"no answer within {limit:.1f} s while in step '{phase}' (a deadlock, or a "
                                    "kernel far slower than the originals); the worker was stopped")
            try:
                kind, value = worker.connection.recv()
            except (EOFError, OSError):
                if self._shut_down:
                    raise WorkerShutDown() from None
                log = self._stop()
                raise WorkerCrashed(f"the worker process died in step '{phase}'"
                                    + (f"; its last output:\n{log}" if log else "")) from None
            if kind == "phase":
                phase, limit = value, limits.for_phase(value, slowest_ms, settings)
            elif kind == "done":
                return value
            elif kind == "last":  # its answer, and it exits: its CUDA context is lost
                worker.busy = False
                self._stop()
                return value
            elif kind == "error":
                worker.busy = False
                if not isinstance(value, BaseException):
                    raise HFuseError(str(value))
                raise value
            else:
                raise HFuseError(f"unexpected message from the worker: {kind!r}")

    def _load(self, worker: _Worker, inputs: str, setup: WorkerSetup, limits: TimeLimits) -> None:
        worker.connection.send(("setup", inputs, setup))
        worker.busy = True
        try:
            self._answer(worker, "start", limits, None, setup.settings)
        except (WorkerTimeout, WorkerCrashed) as err:
            raise HFuseError(f"the worker process could not take the inputs: {err.message}") from err
        except BaseException:
            self._stop(kill=True)  # it exits after saying why
            raise
        worker.busy = False
        worker.inputs.add(inputs)

    def _start(self, setup: WorkerSetup) -> _Worker:
        parent_end, child_end = socket.socketpair()
        log = Path(self._log_dir) / f"worker-{self.workers_started}.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH", "")) if p)
        prefix = [part.replace("{worker}", str(self.workers_started)) for part in self.prefix]
        command = [*prefix, sys.executable, "-m", self.module, str(child_end.fileno()), str(os.getpid())]
        with open(log, "wb") as out:
            try:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                           pass_fds=(child_end.fileno(),), env=env, start_new_session=True)
            except OSError as exc:
                parent_end.close()
                raise HFuseError(f"could not start a worker process ({command[0]}): {exc}") from exc
            finally:
                child_end.close()
        self.workers_started += 1
        self._worker = _Worker(process, Connection(parent_end.detach()), log)
        return self._worker

    def _stop(self, kill: bool = False) -> str:
        """Stops the worker (killing it if it is hung, or does not stop at once); returns its log's tail."""
        worker, self._worker = self._worker, None
        if worker is None:
            return ""
        try:
            if not (kill or worker.busy):
                worker.connection.send(("stop", None, None))
                worker.process.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        if worker.process.poll() is None:
            try:  # its whole process group: a tool it runs under, and the Python under it
                os.killpg(worker.process.pid, signal.SIGKILL)
            except OSError:
                worker.process.kill()
            try:
                worker.process.wait(timeout=60)  # the driver tears a hung kernel's context down
            except subprocess.TimeoutExpired:
                pass
        worker.connection.close()
        try:
            return "\n".join(worker.log.read_text(errors="replace").strip().splitlines()[-15:])
        except OSError:
            return ""


@dataclass
class WorkerMeasurer:
    """The ``Measurer`` interface for one session's inputs, served by a ``GpuWorker``
    (its own, or one shared with other sessions) under time limits."""

    setup: WorkerSetup
    limits: TimeLimits = field(default_factory=TimeLimits)
    prefix: Sequence[str] = ()
    """For a worker of its own: a command it runs under (see ``GpuWorker.prefix``)."""
    module: str = "hfuse.tuning.worker"
    worker: GpuWorker | None = None
    """A worker shared with other sessions (kept when this one closes); None: one of its own."""
    slowest_ms: float | None = None
    """The slowest original kernel alone: sets the run limits (known after ``unfused``)."""
    retries: int = 1
    """A candidate whose worker died without a word is measured again this many times in
    a fresh worker (something else may have killed it); a second death is ``crashed``."""

    def __post_init__(self) -> None:
        self._owns_worker = self.worker is None
        self._gpu = self.worker or GpuWorker(prefix=self.prefix, module=self.module)
        self._inputs = self._gpu.add(self.setup)

    @property
    def workers_started(self) -> int:
        return self._gpu.workers_started

    @property
    def _worker(self) -> _Worker | None:
        return self._gpu._worker

    # -- the Measurer interface ------------------------------------------------------
    def unfused(self, originals: Sequence[LaunchJob]) -> UnfusedReport:
        try:
            report: UnfusedReport = self._call("unfused", list(originals))
        except WorkerTimeout as err:
            raise HFuseError(f"the unfused kernels did not finish: {err.message}",
                             hint="run them alone to check they terminate on these inputs") from err
        except WorkerCrashed as err:
            raise HFuseError(f"the unfused kernels failed: {err.message}") from err
        self.slowest_ms = max((t.median_ms for t in report.baselines.alone.values()), default=None)
        return report

    def resume(self, baselines: Baselines) -> None:
        self.slowest_ms = max((t.median_ms for t in baselines.alone.values()), default=None)

    def co_resident(self, request: CoResidentRequest) -> CoResidentReport:
        try:
            return self._call("co_resident", request)
        except (WorkerTimeout, WorkerCrashed) as err:
            return CoResidentReport({}, {k: err.message for k in request.by_k})

    def measure(self, request: MeasureRequest) -> CandidateResult:
        for attempt in range(self.retries + 1):
            try:
                result: CandidateResult = self._call("measure", request)
            except WorkerTimeout as err:
                return CandidateResult(request.candidate, error=err.message, failure="timeout")
            except WorkerCrashed as err:
                if attempt < self.retries:
                    continue
                return CandidateResult(request.candidate, error=err.message, failure="crashed")
            return result
        raise AssertionError("unreachable")

    def run_once(self, jobs: Sequence[LaunchJob]) -> None:
        self._call("run_once", list(jobs))

    def close(self) -> None:
        if self._owns_worker:
            self._gpu.close()
        else:
            self._gpu.release(self._inputs)

    def __enter__(self) -> "WorkerMeasurer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, argument: Any) -> Any:
        return self._gpu.call(self._inputs, method, argument, self.limits, self.slowest_ms)
