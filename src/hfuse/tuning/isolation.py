"""Candidates measured in a worker process, under time limits.

A fused kernel that deadlocks on a barrier never returns, and one that faults leaves a
sticky error that ends its CUDA context. So the tuner does not run candidates in its own
process: ``WorkerMeasurer`` starts ``python -m hfuse.tuning.worker``, which has a context
of its own, gives it the tuning inputs as a host image (``runtime.transfer``) and sends
it one request at a time. Each step the worker announces (``measure.Phase``) gets a time
limit (``TimeLimits``); a worker that overruns it is killed and the candidate recorded
as ``timeout``; one that dies, or reports that its context is lost, is recorded as
``crashed``. The next request starts a fresh worker. The caller's own context is never
touched by a candidate, and Ctrl-C (or any exception) kills the worker on the way out.

The worker runs in a session of its own, so a Ctrl-C in the terminal reaches only the
tuner, which stops it; it also exits by itself if the tuner's process goes away. A
command ``prefix`` (e.g. ``compute-sanitizer --tool racecheck``) runs it under a tool.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Sequence

from ..errors import HFuseError
from ..runtime.jobs import LaunchJob
from ..runtime.transfer import ArrayRef, HostImage
from .measure import CoResidentReport, CoResidentRequest, MeasureRequest, MeasureSettings, UnfusedReport
from .plan import CandidateResult


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

    image: HostImage
    outputs: tuple[ArrayRef, ...]
    """Every array a kernel writes: restored to its initial contents before each run."""
    settings: MeasureSettings


class WorkerTimeout(HFuseError):
    """The worker overran a step's time limit and was killed."""


class WorkerCrashed(HFuseError):
    """The worker died (or lost its CUDA context) during a request."""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


@dataclass
class _Worker:
    process: subprocess.Popen
    connection: Connection
    log: Path
    busy: bool = False
    """A request is under way (an interrupted wait leaves it so): stopping means killing."""


@dataclass
class WorkerMeasurer:
    """The ``Measurer`` interface, served by a worker process under time limits."""

    setup: WorkerSetup
    limits: TimeLimits = field(default_factory=TimeLimits)
    prefix: Sequence[str] = ()
    """A command the worker runs under (a sanitizer), or nothing; ``{worker}`` in it is
    replaced by the worker's number (a log file per worker)."""
    module: str = "hfuse.tuning.worker"
    """The worker's module, run as ``python -m MODULE FD PARENT_PID``."""
    slowest_ms: float | None = None
    """The slowest original kernel alone: sets the run limits (known after ``unfused``)."""
    workers_started: int = 0
    _worker: _Worker | None = None

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

    def co_resident(self, request: CoResidentRequest) -> CoResidentReport:
        try:
            return self._call("co_resident", request)
        except (WorkerTimeout, WorkerCrashed) as err:
            return CoResidentReport({}, {k: err.message for k in request.by_k})

    def measure(self, request: MeasureRequest) -> CandidateResult:
        try:
            result: CandidateResult = self._call("measure", request)
        except WorkerTimeout as err:
            return CandidateResult(request.candidate, error=err.message, failure="timeout")
        except WorkerCrashed as err:
            return CandidateResult(request.candidate, error=err.message, failure="crashed")
        if result.failure == "crashed":
            self._stop()  # it exits after answering: its context is gone
        return result

    def run_once(self, jobs: Sequence[LaunchJob]) -> None:
        self._call("run_once", list(jobs))

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> "WorkerMeasurer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the worker ------------------------------------------------------------------
    def _call(self, method: str, argument: Any) -> Any:
        if self._worker is not None and self._worker.process.poll() is not None:
            self._stop()  # it exited after its last answer (a lost context): start afresh
        worker = self._worker or self._start()
        try:
            worker.connection.send((method, argument))
        except OSError:  # it exited between the check and the send
            self._stop(kill=True)
            worker = self._start()
            worker.connection.send((method, argument))
        worker.busy = True
        value = self._answer(worker, method)
        worker.busy = False
        return value

    def _answer(self, worker: _Worker, phase: str) -> Any:
        limit = self.limits.for_phase(phase, self.slowest_ms, self.setup.settings)
        while True:
            try:
                ready = worker.connection.poll(limit)
            except (OSError, EOFError):
                ready = True
            if not ready:
                self._stop(kill=True)
                raise WorkerTimeout(f"no answer within {limit:.1f} s while in step '{phase}' (a deadlock, or a "
                                    "kernel far slower than the originals); the worker was stopped")
            try:
                kind, value = worker.connection.recv()
            except (EOFError, OSError):
                log = self._stop()
                raise WorkerCrashed(f"the worker process died in step '{phase}'"
                                    + (f"; its last output:\n{log}" if log else "")) from None
            if kind == "phase":
                phase, limit = value, self.limits.for_phase(value, self.slowest_ms, self.setup.settings)
            elif kind == "done":
                return value
            elif kind == "error":
                worker.busy = False
                if not isinstance(value, BaseException):
                    raise HFuseError(str(value))
                raise value
            else:
                raise HFuseError(f"unexpected message from the worker: {kind!r}")

    def _start(self) -> _Worker:
        parent_end, child_end = socket.socketpair()
        log = Path(self.setup.image.directory) / f"worker-{self.workers_started}.log"
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
        worker = _Worker(process, Connection(parent_end.detach()), log)
        self._worker = worker
        worker.connection.send(("setup", self.setup))
        try:
            self._answer(worker, "start")
        except (WorkerTimeout, WorkerCrashed) as err:
            raise HFuseError(f"the worker process could not start: {err.message}") from err
        return worker

    def _stop(self, kill: bool = False) -> str:
        """Stops the worker (killing it if it is hung, or does not stop at once); returns its log's tail."""
        worker, self._worker = self._worker, None
        if worker is None:
            return ""
        try:
            if not (kill or worker.busy):
                worker.connection.send(("stop", None))
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

