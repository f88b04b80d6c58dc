"""Tuning a batch of requests on this machine.

``run_request`` tunes one ``TuneRequest`` with a given measurement backend and compile
runner and says what became of it (``Outcome``); nothing it raises for a request's own
reasons (bad inputs, kernels that hang alone) escapes: the batch goes on. ``run_batch``
runs a manifest's requests:

- compiles on one ``ProcessCompilePool`` shared by every request (NVRTC on every CPU);
- measurements on one isolated worker per GPU (``GpuWorker``, a ``Lane`` each), kept for
  the whole batch, each request's inputs made there once;
- ``concurrency`` requests at a time per GPU (default 2), so one request compiles while
  another measures; each GPU still runs one kernel at a time;
- each finished request is written out (``NAME-plan.json``, ``NAME.cu`` when it fuses)
  and journaled at once, so a killed batch started again skips it; a request cut off
  mid-search resumes from the tuner's own journal of its measurements;
- at the end ``batch.json`` (GPU, driver, date, wall time, every outcome) and a table.

Given another ``source`` (``ray_runner.ray_outcomes``), the same requests run on Ray.
"""
from __future__ import annotations

import datetime
import json
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import HFuseError
from ..files import writable_directory, write_atomically, write_output
from ..runtime.compile import CompileRunner
from ..spec import with_file_options
from ..runtime.compile_pool import ProcessCompilePool
from ..tuning.backends import IsolatedBackend, MeasureBackend
from ..tuning.isolation import GpuWorker
from ..tuning.plan import Plan
from ..tuning.tuner import tune
from .manifest import Manifest, TuneRequest
from .outcome import BatchJournal, Outcome


def run_request(request: TuneRequest, *, backend: MeasureBackend, runner: CompileRunner | None,
                cache_dir: Path, use_cache: bool = True) -> tuple[Outcome, Plan | None]:
    """Tunes one request; a failure of the request's own is an ``Outcome``, not an exception."""
    start = time.perf_counter()
    identity = request.identity()
    try:
        launches, options = request.inputs.launches(), request.options
        if request.build:  # (each kernel's file read with its build's flags)
            specs, options, _ = with_file_options([l.kernel for l in launches], options, request.build)
            launches = [replace(launch, kernel=spec) for launch, spec in zip(launches, specs)]
        plan = tune(launches, request.settings, cache_dir=cache_dir, use_cache=use_cache, progress=False,
                    options=options, backend=backend, runner=runner, recipe=request.inputs)
    except HFuseError as err:
        return Outcome(request.name, identity, "failed", time.perf_counter() - start, error=str(err)), None
    except Exception as err:  # the user's launches function, a CUDA error outside any candidate
        return Outcome(request.name, identity, "failed", time.perf_counter() - start,
                       error=f"{type(err).__name__}: {err}"), None
    seconds = time.perf_counter() - start
    return Outcome(request.name, identity, "fused" if plan.should_fuse else "declined", seconds,
                   speedup=plan.speedup, chosen=plan.chosen, fastest_unfused=plan.baselines.fastest_way(),
                   candidates=len(plan.candidates), gpu=plan.gpu, driver=plan.driver), plan


def write_request(out_dir: Path, outcome: Outcome, plan: Plan | None) -> Outcome:
    """The request's plan (and fused file) in ``out_dir``; the outcome names them."""
    if plan is None:
        return outcome
    plan_file = plan.save(out_dir / f"{outcome.name}-plan.json")
    fused_file = write_output(out_dir / f"{outcome.name}.cu", plan.fused_source, "fused file") \
        if plan.should_fuse and plan.fused_source else None
    return Outcome(**{**outcome.to_dict(), "plan_file": str(plan_file), "fused_file": str(fused_file) if fused_file else None})


@dataclass
class BatchReport:
    manifest: Manifest
    outcomes: list[Outcome]
    """In the manifest's order."""
    wall_s: float
    resumed: int
    """Requests finished by an earlier run of the batch, not tuned again."""
    executor: str = "local"
    date: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in ("fused", "declined", "failed")}
        gpus = sorted({o.gpu for o in self.outcomes if o.gpu})
        drivers = sorted({o.driver for o in self.outcomes if o.driver})
        return {"manifest": str(self.manifest.path), "name": self.manifest.name, "gpu": ", ".join(gpus),
                "driver": ", ".join(drivers), "date": self.date, "executor": self.executor, "wall_s": round(self.wall_s, 3),
                "requests": len(self.outcomes), "resumed": self.resumed, **counts,
                "outcomes": [o.to_dict() for o in self.outcomes]}

    def save(self) -> Path:
        return write_atomically(self.manifest.output / "batch.json", json.dumps(self.to_dict(), indent=1) + "\n")


def _first_line(text: str | None) -> str:
    return next(iter((text or "").splitlines()), "")


def summary_table(report: BatchReport) -> Table:
    table = Table(title=f"{report.manifest.name}: {len(report.outcomes)} requests, {report.wall_s:.1f} s"
                  + (f" ({report.resumed} from an earlier run)" if report.resumed else ""))
    for column in ("request", "decision", "speedup", "chosen", "fastest unfused", "candidates", "time"):
        table.add_column(column, justify="right" if column in ("speedup", "candidates", "time") else "left")
    for o in report.outcomes:
        decision = {"fused": "[green]fuse[/]", "declined": "do not fuse", "failed": "[red]failed[/]"}[o.status]
        table.add_row(o.name, decision, f"{o.speedup:.3f}x" if o.speedup else "",
                      escape(o.chosen or _first_line(o.error)[:60] if o.status != "declined" else ""),
                      o.fastest_unfused or "", str(o.candidates or ""),
                      f"{o.seconds:.1f} s")
    return table


OutcomeSource = Callable[[Sequence[TuneRequest]], Iterable[tuple[Outcome, Plan | None]]]
"""Tunes requests somewhere and yields each one's outcome (and plan) as it finishes."""


@dataclass(frozen=True)
class Lane:
    """Where some of a batch's requests are measured: a backend, and the GPU (CuPy's device
    index) the requests' inputs are made on (None: the current one)."""

    backend: MeasureBackend
    device: int | None = None


def gpu_lanes() -> list[Lane]:
    """One lane per visible GPU, each with an isolated worker of its own."""
    import cupy

    return [Lane(IsolatedBackend(GpuWorker()), index) for index in range(cupy.cuda.runtime.getDeviceCount())]


def local_outcomes(lanes: Sequence[Lane], runner: CompileRunner | None, cache_dir: Path, use_cache: bool,
                   concurrency: int) -> OutcomeSource:
    """Requests tuned here, ``concurrency`` at a time on each lane (GPU), on daemon threads
    that take the next request as they finish one: when the batch stops (Ctrl-C), the
    caller shuts the workers and the compile pool down and leaves; a request cut off then
    records nothing more (its measurements so far are journaled)."""
    def outcomes(requests: Sequence[TuneRequest]) -> Iterable[tuple[Outcome, Plan | None]]:
        todo: queue.Queue = queue.Queue()
        done: queue.Queue = queue.Queue()
        for request in requests:
            todo.put(request)

        def work(lane: Lane) -> None:
            if lane.device is not None:
                import cupy

                cupy.cuda.Device(lane.device).use()  # this thread's inputs and limits: the lane's GPU
            while True:
                try:
                    request = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((True, run_request(request, backend=lane.backend, runner=runner, cache_dir=cache_dir,
                                                use_cache=use_cache)))
                except BaseException as exc:  # the batch stopping under it: said to the caller
                    done.put((False, exc))

        threads = max(1, min(concurrency, -(-len(requests) // max(1, len(lanes)))))
        for lane_number, lane in enumerate(lanes):
            for number in range(threads):
                threading.Thread(target=work, args=(lane,), name=f"hfuse-request-{lane_number}-{number}",
                                 daemon=True).start()
        for _ in requests:
            ok, value = done.get()
            if not ok:
                raise value
            yield value
    return outcomes


def run_batch(manifest: Manifest, *, source: OutcomeSource | None = None, backend: MeasureBackend | None = None,
              lanes: Sequence[Lane] | None = None, runner: CompileRunner | None = None, cache_dir: Path | None = None,
              use_cache: bool = True, concurrency: int = 2, fresh: bool = False, console: Console | None = None,
              progress: bool = True, executor: str = "local") -> BatchReport:
    """Tunes every request of ``manifest`` not finished by an earlier run (all with ``fresh``).

    ``source`` runs the requests (``ray_runner.ray_outcomes``, say); by default they run
    here, on ``lanes`` (default: one isolated worker per visible GPU; ``backend``: one lane
    measured by it) with compiles on ``runner`` (a pool of processes)."""
    console = console or Console(stderr=True, highlight=False)
    out_dir = writable_directory(manifest.output)
    cache_dir = cache_dir or out_dir / ".hfuse-cache"
    journal = BatchJournal(out_dir / "batch-journal.jsonl")
    if fresh:
        journal.clear()
    done = journal.read()
    pending = [r for r in manifest.requests if r.identity() not in done]
    finished = {r.identity(): done[r.identity()] for r in manifest.requests if r.identity() in done}
    start = time.perf_counter()
    owned: list[Any] = []
    try:
        if source is None:
            if lanes is None:
                lanes = [Lane(backend)] if backend is not None else gpu_lanes()
                owned += [lane.backend.worker for lane in lanes if backend is None]  # type: ignore[attr-defined]
            if runner is None:
                runner = ProcessCompilePool()
                owned.append(runner)
            source = local_outcomes(lanes, runner, cache_dir, use_cache, concurrency)
        if finished:
            console.print(f"[dim]{len(finished)} of {len(manifest.requests)} requests finished by an earlier run "
                          f"(journal {journal.path}); tuning the other {len(pending)}[/]")
        bar = Progress(TextColumn("[bold]batch[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("{task.description}"), console=console, disable=not progress)
        with bar:
            task = bar.add_task("", total=len(pending))
            for outcome, plan in source(pending):
                outcome = write_request(out_dir, outcome, plan)
                journal.add(outcome)
                finished[outcome.identity] = outcome
                if outcome.status == "failed":
                    bar.console.print(f"  [red]failed[/] {outcome.name}: {escape(_first_line(outcome.error))}",
                                      highlight=False)
                bar.update(task, advance=1, description=outcome.name)
    finally:
        for thing in reversed(owned):  # at once, even under requests still running (Ctrl-C)
            getattr(thing, "shut_down", thing.close)()
    outcomes = [finished[r.identity()] for r in manifest.requests if r.identity() in finished]
    report = BatchReport(manifest, outcomes, time.perf_counter() - start, resumed=len(manifest.requests) - len(pending),
                         executor=executor)
    report.save()
    return report
