"""Compiles (NVRTC, or nvcc) on a pool of CPU processes: a ``CompileRunner`` for ``Compiler(runner=...)``.

A tuning run compiles on threads (NVRTC releases the GIL), which is enough for one
request. A batch of many requests generates and compiles far more than one process's
threads keep up with, and one NVRTC that crashes must not take the tuner with it. So a
``ProcessCompilePool`` runs each ``CompileJob`` in one of N worker processes (started
with ``spawn``: the tuner's process holds a CUDA context and threads, which a forked
child must not inherit). A worker that dies (killed, out of memory) breaks the pool; the
pool is started again and every job that was in it is handed out again, up to
``retries`` times per job, after which that job fails with a ``CompileError`` that says
so. Jobs never wait for one another: the pool is shared by every request of a batch.
"""
from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
import threading
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from .binary import CompileError, CompiledBinary
from .compile import CompileJob, run_compile_job


class CompilePoolClosed(BaseException):
    """A compile asked of a pool that was closed (the batch is stopping): not a compile
    failure of the source, so not an ``Exception`` a tuner would record as one."""


def default_processes() -> int:
    """One compile process per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class ProcessCompilePool:
    """``pool(job)`` compiles ``job`` in a worker process and returns its binary."""

    processes: int = field(default_factory=default_processes)
    retries: int = 2
    """How many times a job whose worker died is handed out again."""
    restarts: int = 0
    """How many times the pool was started again after a worker died (for reports, tests)."""
    _closed: bool = False
    _executor: futures.ProcessPoolExecutor | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, job: CompileJob) -> CompiledBinary:
        for attempt in range(self.retries + 1):
            executor = self._current()
            try:
                return executor.submit(run_compile_job, job).result()
            except (BrokenProcessPool, futures.CancelledError):
                if self._closed:
                    raise CompilePoolClosed() from None
                self._replace(executor)
        raise CompileError(f"the compile process died {self.retries + 1} times compiling "
                           f"{', '.join(job.names) or 'the source'} (NVRTC crashed, or the machine ran out of memory)",
                           "", job.options)

    def _current(self) -> futures.ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise CompilePoolClosed()
            if self._executor is None:
                self._executor = futures.ProcessPoolExecutor(
                    max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"))
            return self._executor

    def _replace(self, broken: futures.ProcessPoolExecutor) -> None:
        """Drops ``broken`` (once, whichever of its jobs' threads gets here first)."""
        with self._lock:
            if self._executor is broken:
                self._executor = None
                self.restarts += 1
        broken.shutdown(wait=False, cancel_futures=True)

    def worker_pids(self) -> list[int]:
        """The pool's processes now (none before the first job)."""
        with self._lock:
            processes = getattr(self._executor, "_processes", None) or {}
            return list(processes)

    def close(self) -> None:
        """No more compiles: those waiting are cancelled, those running end with the pool."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
            for process in list((getattr(executor, "_processes", None) or {}).values()):
                process.terminate()

    def __enter__(self) -> "ProcessCompilePool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
