"""Where a tuning session's kernels are verified and timed: a measurement backend.

The tuner generates and compiles candidates; a backend gives it this GPU's limits and,
for one session's inputs, something with the ``Measurer`` interface (``unfused``,
``co_resident``, ``measure``):

- ``IsolatedBackend`` (the default): a worker process under time limits
  (``isolation``). Given a ``GpuWorker``, every session shares that one process, so a
  batch of requests pays for starting a worker and loading modules once per GPU;
- ``InProcessBackend``: this process (fastest; a hung or faulting candidate takes the
  tuner down with it);
- ``recorded.RecordedBackend``: measurements given as data, no GPU (tests, replays).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, ContextManager, Iterator, Protocol, Sequence

from ..runtime.device import DeviceLimits, require_gpu
from ..runtime.jobs import LaunchJob
from ..runtime.transfer import ArrayRef, describe_arrays, resolve, save_image
from .isolation import GpuWorker, TimeLimits, WorkerMeasurer, WorkerSetup
from .measure import CoResidentReport, CoResidentRequest, MeasureRequest, MeasureSettings, Measurer, UnfusedReport
from .plan import Baselines, CandidateResult


@dataclass(frozen=True)
class SessionInputs:
    """One tuning session's inputs, as a backend is given them."""

    name: str
    """The launches' names joined with ``+``: how a recording made by hand finds it."""
    key: str
    """The tuning cache key: how a recording of a GPU run's plans finds it."""
    arrays: Sequence[Any]
    """Its device arrays, in ``ArrayTable`` order."""
    outputs: tuple[ArrayRef, ...]
    """The arrays kernels write: restored before each run."""
    settings: MeasureSettings
    time_limits: TimeLimits
    recipe: Any = None
    """How the arrays were made (``batch.inputs``), if known: a worker makes its own from it
    instead of being sent a copy."""


class Measuring(Protocol):
    """What the tuner asks of a measurer (``measure.Measurer`` and its stand-ins)."""

    def unfused(self, originals: Sequence[LaunchJob]) -> UnfusedReport: ...

    def co_resident(self, request: CoResidentRequest) -> CoResidentReport: ...

    def measure(self, request: MeasureRequest) -> CandidateResult: ...

    def resume(self, baselines: Baselines) -> None:
        """The unfused kernels' times of an earlier run (a resumed one does not measure them
        again): what sets a worker's time limits."""
        ...


class MeasureBackend(Protocol):
    def device_limits(self) -> DeviceLimits:
        """The GPU the candidates are measured on (its arch is what they are compiled for)."""
        ...

    def open(self, inputs: SessionInputs) -> ContextManager[Measuring]:
        """A measurer for one session, released when the context ends."""
        ...


@dataclass
class InProcessBackend:
    """This process's GPU, in this process."""

    def device_limits(self) -> DeviceLimits:
        require_gpu()
        return DeviceLimits.current()

    @contextlib.contextmanager
    def open(self, inputs: SessionInputs) -> Iterator[Measuring]:
        yield Measurer(inputs.arrays, resolve(inputs.outputs, inputs.arrays), inputs.settings)


@dataclass
class IsolatedBackend:
    """This process's GPU, in a worker process: ``worker`` shared by every session, or
    (None) a worker of its own per session."""

    worker: GpuWorker | None = None

    def device_limits(self) -> DeviceLimits:
        require_gpu()
        return DeviceLimits.current()

    @contextlib.contextmanager
    def open(self, inputs: SessionInputs) -> Iterator[Measuring]:
        if inputs.recipe is not None:  # made again in the worker: nothing to copy
            setup = WorkerSetup(None, inputs.outputs, inputs.settings, recipe=inputs.recipe,
                                layout=describe_arrays(inputs.arrays))
            with WorkerMeasurer(setup, inputs.time_limits, worker=self.worker) as measurer:
                yield measurer
            return
        image = save_image(inputs.arrays)
        try:
            with WorkerMeasurer(WorkerSetup(image, inputs.outputs, inputs.settings), inputs.time_limits,
                                worker=self.worker) as measurer:
                yield measurer
        finally:
            image.remove()


def default_backend(isolate: bool) -> MeasureBackend:
    return IsolatedBackend() if isolate else InProcessBackend()
