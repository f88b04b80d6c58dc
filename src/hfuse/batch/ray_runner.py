"""A batch on Ray: compiles as Ray tasks on CPU nodes, measurements in one actor per GPU.

Ray is optional (``pip install 'hfuse[ray]'``); ``hfuse tune MANIFEST --ray`` (or a
``RAY_ADDRESS`` in the environment) runs the batch here instead of on this machine:

- ``ray.init`` joins the cluster at ``RAY_ADDRESS`` (``ray start --head`` on one machine,
  ``ray start --address=HEAD:6379`` on the others), or starts a Ray of its own on this
  machine when there is none;
- one ``TuningActor`` per GPU of the cluster (``num_gpus=1``) tunes whole requests: it
  makes the request's inputs on its GPU (from the request's recipe, nothing is copied),
  measures in an isolated worker of its own (``GpuWorker``, kept for every request it
  gets) and sends every NVRTC compile to a Ray task (``num_cpus=1``), so compiles spread
  over every CPU of the cluster;
- each actor takes ``concurrency`` requests at a time; the driver hands out the next
  request as one finishes, and writes plans and the journal as on one machine;
- plans and binaries go to ``cache_dir``: a path every node can reach makes one cache for
  the cluster. Plans are keyed by GPU name and toolkit (among the rest; not the driver), binaries by
  source, options, NVRTC version and architecture, so a plan tuned on one H100 serves
  every H100 and never an A100.

An actor that dies (its machine lost, killed) is replaced, and the requests it had are
handed out once more (what they measured is in the tuner's journal in the cache, so
nothing is measured twice where the cache is shared); a request that loses its actor a
second time fails, and the batch goes on.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import HFuseError
from ..runtime.binary import CompiledBinary
from ..runtime.compile import CompileJob, run_compile_job
from ..tuning.backends import IsolatedBackend, MeasureBackend
from ..tuning.isolation import GpuWorker
from ..tuning.plan import Plan
from .manifest import TuneRequest
from .outcome import Outcome
from .runner import OutcomeSource, run_request

BackendFactory = Callable[[], MeasureBackend]


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise HFuseError("--ray needs Ray, which is not installed", hint="pip install 'hfuse[ray]'") from None
    return ray


def isolated_gpu_backend() -> MeasureBackend:
    """An actor's backend on a GPU: one isolated worker, kept for every request."""
    return IsolatedBackend(GpuWorker())


class RayCompileRunner:
    """An ``CompileRunner`` that runs each compile as a Ray task (Ray retries one whose worker died)."""

    def __init__(self) -> None:
        ray = require_ray()
        self._ray = ray
        self._task = ray.remote(num_cpus=1, max_retries=2)(run_compile_job)

    def __call__(self, job: CompileJob) -> CompiledBinary:
        return self._ray.get(self._task.remote(job))


class TuningActor:
    """Tunes whole requests on one GPU (a Ray actor: ``num_gpus=1``)."""

    def __init__(self, cache_dir: str, use_cache: bool, make_backend: BackendFactory):
        self.cache_dir = Path(cache_dir)
        self.use_cache = use_cache
        self.problem: str | None = None
        """Why it cannot tune (said by ``ready``: Ray keeps a constructor's exception to its logs)."""
        try:
            self.backend = make_backend()
            self.runner = RayCompileRunner()
        except Exception as err:
            self.problem = f"{type(err).__name__}: {err}"

    def ready(self) -> str | None:
        return self.problem

    def run(self, request: TuneRequest) -> tuple[Outcome, str | None]:
        outcome, plan = run_request(request, backend=self.backend, runner=self.runner, cache_dir=self.cache_dir,
                                    use_cache=self.use_cache)
        return outcome, plan.to_json() if plan is not None else None

    def pid(self) -> int:
        return os.getpid()


@dataclass
class RayOptions:
    address: str | None = None
    """A cluster's address; None: ``RAY_ADDRESS`` if set, else a Ray of this machine."""
    actors: int | None = None
    """How many tuning actors (default: one per GPU of the cluster)."""
    gpus_per_actor: float = 1.0
    """0 only for a backend that needs no GPU (a recorded one, in tests)."""
    concurrency: int = 2
    """Requests each actor tunes at a time."""
    init: dict[str, Any] | None = None
    """More ``ray.init`` arguments (``num_cpus`` for a local Ray, say)."""


def ray_outcomes(cache_dir: Path, use_cache: bool, options: RayOptions,
                 make_backend: BackendFactory = isolated_gpu_backend) -> OutcomeSource:
    def outcomes(requests: Sequence[TuneRequest]) -> Iterable[tuple[Outcome, Plan | None]]:
        return _run(requests, cache_dir, use_cache, options, make_backend)
    return outcomes


def _run(requests: Sequence[TuneRequest], cache_dir: Path, use_cache: bool, options: RayOptions,
         make_backend: BackendFactory) -> Iterator[tuple[Outcome, Plan | None]]:
    ray = require_ray()
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=options.address or os.environ.get("RAY_ADDRESS"), log_to_driver=False,
                 include_dashboard=False, **(options.init or {}))
    try:
        count = options.actors
        if count is None:
            count = int(ray.cluster_resources().get("GPU", 0) // max(options.gpus_per_actor, 1e-9))
        if count < 1:
            raise HFuseError("the Ray cluster has no GPU to measure on",
                             hint="start a node with a GPU ('ray start --address=...' on a GPU machine)")
        actor_class = ray.remote(TuningActor).options(num_gpus=options.gpus_per_actor, num_cpus=0,
                                                      max_concurrency=max(1, options.concurrency))
        actors = [actor_class.remote(str(cache_dir), use_cache, make_backend) for _ in range(count)]
        try:
            problems = {p for p in ray.get([a.ready.remote() for a in actors]) if p}
        except ray.exceptions.RayActorError as err:  # it could not even be unpickled there
            problems = {str(err).splitlines()[0]}
        if problems:
            raise HFuseError(f"a tuning actor could not start: {'; '.join(sorted(problems))}",
                             hint="every Ray node needs hfuse installed (and CuPy where there is a GPU)")
        load = {i: 0 for i in range(count)}
        queue = list(requests)
        retried: set[str] = set()
        running: dict[Any, tuple[int, Any, TuneRequest]] = {}
        while queue or running:
            while queue and min(load.values()) < options.concurrency:
                actor = min(load, key=load.__getitem__)
                request = queue.pop(0)
                running[actors[actor].run.remote(request)] = (actor, actors[actor], request)
                load[actor] += 1
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                actor, handle, request = running.pop(ref)
                load[actor] -= 1
                try:
                    outcome, plan_json = ray.get(ref)
                except ray.exceptions.RayActorError as err:
                    if actors[actor] is handle:  # the first of its requests to say so: replace it, once
                        actors[actor] = actor_class.remote(str(cache_dir), use_cache, make_backend)
                    if request.identity() not in retried:  # measured so far is in its journal: nothing is lost
                        retried.add(request.identity())
                        queue.insert(0, request)
                        continue
                    yield Outcome(request.name, request.identity(), "failed", 0.0,
                                  error=f"the tuning actor died twice on it: {str(err).splitlines()[0]}"), None
                    continue
                yield outcome, Plan.from_json(plan_json) if plan_json else None
    finally:
        if started_here:
            ray.shutdown()
