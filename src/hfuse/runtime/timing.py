"""Honest GPU timing: warm-up by time, CUDA events, many repetitions, L2 flushed.

Each repetition is: [optional setup] -> flush L2 -> start event -> work -> end event,
all on one stream, so the flush and the setup lie outside the measured interval but
still separate the repetitions (no repetition finds the previous one's data in L2).
The flush writes a buffer of twice the L2 size with ``cudaMemsetAsync``.
We report the median (robust to the odd slow repetition) with min, p20, p80 and n.

Baselines for a pair (or more) of kernels:
- ``time_alone``: one kernel by itself;
- ``time_two_streams``: each kernel on its own non-blocking stream; measured from an
  event on the timing stream before the first launch (the side streams wait on it)
  to after all finish (the timing stream waits on each side stream's end event);
- ``time_graph``: the same launches captured once as parallel branches of a CUDA graph,
  replayed with one ``cudaGraphLaunch``: today's way to launch independent kernels.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .device import DeviceLimits, require_gpu
from .execute import PreparedLaunch


@dataclass(frozen=True)
class Timing:
    """Milliseconds per repetition."""

    median_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    mean_ms: float
    n: int

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> "Timing":
        t = np.asarray(samples_ms, dtype=np.float64)
        if t.size == 0:
            raise ValueError("no timing samples")
        p20, med, p80 = np.percentile(t, [20, 50, 80])
        return cls(float(med), float(t.min()), float(p20), float(p80), float(t.mean()), int(t.size))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Timing | None":
        return cls(**data) if data else None


class Timer:
    """Holds what timing needs across calls: a stream, events, and the L2 flush buffer.

    One per tuning run (not global). All timing runs on ``self.stream``; the work is
    called with that stream current, so a launch that uses "the current stream" lands on it.
    """

    def __init__(self, limits: DeviceLimits | None = None, flush_l2: bool = True):
        self.cupy = require_gpu()
        self.limits = limits or DeviceLimits.current()
        self.stream = self.cupy.cuda.Stream(non_blocking=True)
        self.flush_l2 = flush_l2
        self._flush_buf = None
        if flush_l2 and self.limits.l2_bytes > 0:
            self._flush_buf = self.cupy.empty(2 * self.limits.l2_bytes, dtype=self.cupy.uint8)

    def flush(self) -> None:
        """Evicts L2 by writing 2x its size (asynchronous, on the timing stream)."""
        if self._flush_buf is not None:
            buf = self._flush_buf
            self.cupy.cuda.runtime.memsetAsync(buf.data.ptr, 0, buf.nbytes, self.stream.ptr)

    def warm_gpu(self, ms: float = 500.0) -> None:
        """Keeps the GPU busy for about ``ms`` so clocks settle (the paper used 500 ms)."""
        end = time.perf_counter() + ms / 1000.0
        buf = self._flush_buf if self._flush_buf is not None else self.cupy.empty(1 << 26, dtype=self.cupy.uint8)
        while time.perf_counter() < end:
            for _ in range(8):
                self.cupy.cuda.runtime.memsetAsync(buf.data.ptr, 1, buf.nbytes, self.stream.ptr)
            self.stream.synchronize()

    def _run(self, fns: Sequence[Callable[[], None]], reps: int, setup: Callable[[], None] | None,
             flush: bool) -> list[float]:
        cuda = self.cupy.cuda
        starts = [cuda.Event() for _ in range(reps)]
        ends = [cuda.Event() for _ in range(reps)]
        with self.stream:
            for i in range(reps):
                if setup is not None:
                    setup()
                if flush:
                    self.flush()
                starts[i].record(self.stream)
                fns[i % len(fns)]()
                ends[i].record(self.stream)
        self.stream.synchronize()
        return [cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends)]

    def time(
        self,
        fn: Callable[[], None] | Sequence[Callable[[], None]],
        *,
        warmup_ms: float = 25.0,
        rep_ms: float = 100.0,
        min_reps: int = 10,
        max_reps: int = 10_000,
        setup: Callable[[], None] | None = None,
        flush_l2: bool | None = None,
    ) -> Timing:
        """Times ``fn`` (or rotates over several, e.g. one per input set)."""
        fns = list(fn) if isinstance(fn, (list, tuple)) else [fn]
        flush = self.flush_l2 if flush_l2 is None else flush_l2
        # First call outside any measurement: module loading, lazy allocations, errors.
        self._run(fns, len(fns), setup, flush)
        estimate = float(np.median(self._run(fns, max(5, len(fns)), setup, flush)))
        estimate = max(estimate, 1e-3)
        warm = int(min(max_reps, max(1, warmup_ms / estimate)))
        self._run(fns, warm, setup, flush)
        reps = int(min(max_reps, max(min_reps, rep_ms / estimate)))
        return Timing.of(self._run(fns, reps, setup, flush))


def time_callable(
    fn: Callable[[], None] | Sequence[Callable[[], None]],
    *,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    min_reps: int = 10,
    flush_l2: bool = True,
    setup: Callable[[], None] | None = None,
    timer: Timer | None = None,
) -> Timing:
    """Median time of ``fn()``: launches must go to the current stream (the timer's)."""
    timer = timer or Timer(flush_l2=flush_l2)
    return timer.time(fn, warmup_ms=warmup_ms, rep_ms=rep_ms, min_reps=min_reps, setup=setup, flush_l2=flush_l2)


def time_alone(launch: PreparedLaunch, *, timer: Timer | None = None, **kwargs: Any) -> Timing:
    return time_callable(lambda: launch(), timer=timer, **kwargs)


class StreamFork:
    """Runs launches on streams of their own, forked from and joined to the caller's stream
    by events: concurrent on the GPU, ordered with what comes before and after on the
    caller's stream, and captured as parallel branches when that stream is being captured.
    Streams and events are made once, so a call allocates nothing."""

    def __init__(self, branches: int):
        self.cupy = require_gpu()
        cuda = self.cupy.cuda
        self.streams = [cuda.Stream(non_blocking=True) for _ in range(branches)]
        self.fork = cuda.Event(disable_timing=True)
        self.joins = [cuda.Event(disable_timing=True) for _ in range(branches)]

    def launch_all(self, launches: Sequence[Callable[[Any], None]], main: Any = None) -> None:
        """Calls each ``launch(stream)`` on its own stream, joined back to ``main`` (default: current)."""
        main = main or self.cupy.cuda.get_current_stream()
        self.fork.record(main)
        for launch, stream, join in zip(launches, self.streams, self.joins):
            stream.wait_event(self.fork)
            launch(stream)
            join.record(stream)
        for join in self.joins[:len(launches)]:
            main.wait_event(join)


class ConcurrentLaunches:
    """Prepared launches on separate streams, forked from and joined to the current stream."""

    def __init__(self, launches: Sequence[PreparedLaunch]):
        self.launches = list(launches)
        self._fork = StreamFork(len(self.launches))

    def __call__(self, main: Any = None) -> None:
        self._fork.launch_all(self.launches, main)


class SerialLaunches:
    """Prepared launches one after another on one stream."""

    def __init__(self, launches: Sequence[PreparedLaunch]):
        self.launches = list(launches)

    def __call__(self, main: Any = None) -> None:
        for launch in self.launches:
            launch(main)


def time_two_streams(launches: Sequence[PreparedLaunch], *, timer: Timer | None = None, **kwargs: Any) -> Timing:
    """The unfused baseline: each kernel on its own stream, first launch to last finish."""
    concurrent = ConcurrentLaunches(launches)
    return time_callable(lambda: concurrent(), timer=timer, **kwargs)


class LaunchGraph:
    """The launches captured once as parallel branches of a CUDA graph."""

    def __init__(self, launches: Sequence[PreparedLaunch]):
        self.cupy = require_gpu()
        cuda = self.cupy.cuda
        capture = cuda.Stream(non_blocking=True)  # capture needs a non-default stream
        self._concurrent = ConcurrentLaunches(launches)
        with capture:
            capture.begin_capture()
            try:
                # Fork/join through events makes the side streams part of the capture.
                self._concurrent(capture)
            except BaseException:
                try:  # leave the stream usable; the first error is the one to report
                    capture.end_capture()
                except Exception:
                    pass
                raise
            self.graph = capture.end_capture()
        self._capture = capture

    def __call__(self, stream: Any = None) -> None:
        self.graph.launch(stream or self.cupy.cuda.get_current_stream())


def time_graph(launches: Sequence[PreparedLaunch], *, timer: Timer | None = None, **kwargs: Any) -> Timing:
    graph = LaunchGraph(launches)
    return time_callable(lambda: graph(), timer=timer, **kwargs)
