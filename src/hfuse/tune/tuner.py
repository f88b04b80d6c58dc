"""The search (paper Algorithm 2, extended): measure, build, verify, time, choose.

1. Baselines on the tuning inputs: each kernel alone, the kernels on concurrent streams
   (the paper's native baseline), as a CUDA graph with parallel branches, and one after
   another on one stream.
2. Candidates: partitions x register caps, the even split ("naive"), vertical fusion;
   then warp-granular partitions around the best, and balanced grids for grid-free kernels.
3. Each candidate is generated and compiled on worker threads while the GPU measures
   earlier ones; then it is run once on the tuning inputs and its outputs are compared
   with the unfused kernels' outputs at the same block shapes. A candidate that does not
   compile, fails to launch or computes something else is recorded with its error and
   never timed.
4. The fastest verified horizontal candidate is chosen if it beats the fastest unfused way
   (serial, two streams or a graph) by more than ``min_gain``; otherwise the plan says
   "do not fuse", with the numbers (``decision``).
"""
from __future__ import annotations

import concurrent.futures as futures
from collections import OrderedDict
import hashlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ..api import FusedKernel, PreparedUnit, device_source, fuse
from ..api import prepare as prepare_unit
from ..errors import HFuseError
from ..frontend.options import NO_OPTIONS, CompileOptions
from ..launch import KernelLaunch, describe_symbol
from ..runtime.binary_cache import BinaryCache
from ..runtime.compile import CompiledBinary, Compiler, CompileError, LaunchError
from ..runtime.device import DeviceLimits, require_gpu
from ..runtime.execute import (
    OutputSnapshot,
    PreparedLaunch,
    compare_outputs,
    prepare,
    prepare_fused,
    read_source,
    run_once_on_device,
)
from ..runtime.occupancy import occupancy
from ..runtime.symbols import (
    SymbolError,
    compile_with_symbols,
    fused_symbol_names,
    fused_symbols,
    load_with_symbols,
    present_symbols,
)
from ..runtime.timing import ConcurrentLaunches, LaunchGraph, SerialLaunches, Timer, Timing
from ..spec import Dim3, KernelSpec
from .cache import PlanCache, cache_key, describe_launch, header_digests
from .candidates import Candidate, balance_grids, enumerate_candidates, refine_around, with_grids
from .decision import decide, fastest_verified
from .plan import Baselines, CandidateResult, Plan
from .progress import Progress


@dataclass(frozen=True)
class TuneSettings:
    granularity: int = 128
    """Partition step for tunable kernels (the paper's 128)."""
    fused_threads: int | None = None
    """Fused block size d0 (default: the sum of the original block sizes, at most 1024)."""
    caps: bool = True
    neighbour_caps: bool = True
    refine: bool = True
    """Also try warp-granular partitions next to the best one."""
    balance_grids: bool = True
    """For grid-free kernels, also try grids sized so the parts finish together."""
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    flush_l2: bool = True
    workers: int = 8
    min_gain: float = 0.01
    """Fuse only when the best candidate beats the fastest unfused way by more than this fraction (noise)."""
    barrier_form: str = "barrier"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Built:
    fused: FusedKernel
    binary: CompiledBinary


class _Session:
    """The state of one tuning run on one GPU (no globals: made and dropped by ``tune``)."""

    def __init__(self, launches: Sequence[KernelLaunch], settings: TuneSettings, progress: Progress,
                 front_end: "_FrontEnd", binaries: BinaryCache | None = None):
        self.cupy = require_gpu()
        self.launches = list(launches)
        self.settings = settings
        self.progress = progress
        self.limits = front_end.limits
        self.options = front_end.options
        """The user's options, for this GPU's device pass (``#if __CUDA_ARCH__``)."""
        # Every source compiled here (fused or device side) has the -include files inlined already.
        self.compiler = Compiler(limits=self.limits, std=self.options.emitted_std,
                                 options=self.options.compiler_flags(std=False, pre_includes=False), cache=binaries)
        self.timer = Timer(self.limits, flush_l2=settings.flush_l2)
        self.specs = front_end.specs
        self.unit = front_end.unit
        # The originals are compiled from their device side alone (a sample's main() and
        # host headers never reach NVRTC).
        self.device_sources = [device_source(s, sources=front_end.sources, options=self.options) for s in self.specs]
        self._references: OrderedDict[tuple[int, Dim3], list] = OrderedDict()
        # Reference outputs stay on the GPU (host comparison of gigabytes is too slow), but
        # only up to a quarter of its memory: least recently used ones are recomputed.
        self._reference_budget = self.cupy.cuda.Device().mem_info[1] // 4
        self._prepared: dict[tuple[int, Dim3], PreparedLaunch] = {}
        self.originals = [self.original(i, l.kernel.block) for i, l in enumerate(self.launches)]
        arrays = [a for l in self.launches for a in (l.args[o.index] for o in l.outputs)]
        self.snapshot = OutputSnapshot(arrays)

    # -- originals -------------------------------------------------------------------
    def original(self, index: int, block: Dim3) -> PreparedLaunch:
        key = (index, block)
        if key not in self._prepared:
            # Already preprocessed: user headers and -include files are inlined in it.
            unfused = self.device_sources[index]
            launch = self.launches[index]
            launch = replace(launch, source=unfused.source, kernel=replace(launch.kernel, name=unfused.qualified_name))
            self._prepared[key] = prepare(launch.with_block(block), self.compiler)
        return self._prepared[key]

    def reference(self, index: int, block: Dim3) -> list:
        """Outputs of the unfused kernel at this block shape, from the initial outputs."""
        key = (index, block)
        if key in self._references:
            self._references.move_to_end(key)
            return self._references[key]
        outputs = run_once_on_device(self.original(index, block), self.snapshot)
        self._references[key] = outputs
        while len(self._references) > 1 and sum(a.nbytes for v in self._references.values() for a in v) > self._reference_budget:
            self._references.popitem(last=False)
        return outputs

    def time(self, fn: Callable[[], None]) -> Timing:
        s = self.settings
        return self.timer.time(fn, warmup_ms=s.warmup_ms, rep_ms=s.rep_ms, setup=None)

    def baselines(self) -> Baselines:
        self.progress.note("measuring the unfused kernels")
        alone = {}
        for launch, prepared in zip(self.launches, self.originals):
            name = launch.name
            while name in alone:
                name += "'"
            alone[name] = self.time(lambda p=prepared: p())
        concurrent, serial = ConcurrentLaunches(self.originals), SerialLaunches(self.originals)
        two = self.time(lambda: concurrent())
        graph = LaunchGraph(self.originals)
        return Baselines(alone=alone, two_streams=two, graph=self.time(lambda: graph()), serial=self.time(lambda: serial()))

    # -- candidates ------------------------------------------------------------------
    def _launches_for(self, candidate: Candidate) -> list[KernelLaunch]:
        out = []
        for i, (launch, block) in enumerate(zip(self.launches, candidate.blocks)):
            moved = launch.with_block(block)
            grid = candidate.grids[i] if candidate.grids and candidate.grids[i] is not None else None
            if grid is not None:
                moved = moved.with_grid(grid)
            out.append(moved)
        return out

    def build(self, candidate: Candidate) -> _Built:
        """Generate and compile (runs on a worker thread: no CUDA calls here)."""
        specs = [s.with_block(b) for s, b in zip(self.specs, candidate.blocks)]
        fused = fuse(
            specs,
            strategy=candidate.strategy,
            register_cap=candidate.register_cap,
            barrier_form=self.settings.barrier_form,  # type: ignore[arg-type]
            prepared=self.unit,
        )
        # The fused names of the symbols given data (``&name`` expressions for their lowered names).
        symbols = fused_symbol_names(fused.symbol_names, [l.symbols for l in self.launches], fused.source)
        return _Built(fused, compile_with_symbols(self.compiler, fused.source, fused.name_expression, symbols,
                                                  kernel=fused.name, optional=True))

    def measure(self, candidate: Candidate, built: futures.Future) -> CandidateResult:
        result = CandidateResult(candidate)
        try:
            made: _Built = built.result()
            launches = self._launches_for(candidate)
            # Every part's __constant__/__device__ data under the fused names, copied into the
            # candidate's module before it runs (verification and timing alike).
            symbols = present_symbols(made.binary, fused_symbols(
                made.fused.symbol_names, [l.symbols for l in launches], [l.name for l in launches], made.fused.source))
            kernel = load_with_symbols(self.compiler, made.binary, made.fused.name_expression, symbols,
                                       kernel=candidate.label)
            res = kernel.resources
            result.registers, result.local_bytes, result.static_smem = res.registers, res.local_bytes, res.static_smem
            result.spill_stores, result.spill_loads = res.spill_stores, res.spill_loads
            packed = made.fused.pack([l.args for l in launches], [l.grid_for() for l in launches], [l.smem_for() for l in launches])
            occ = occupancy(self.limits, res.registers, packed.block.size, res.static_smem, packed.shared_mem)
            result.occupancy, result.blocks_per_sm = occ.occupancy, occ.blocks_per_sm
            prepared = prepare_fused(kernel, packed, launches, name=candidate.label)
            expected = [o for i, b in enumerate(candidate.blocks) for o in self.reference(i, b)]
            problems = compare_outputs(expected, run_once_on_device(prepared, self.snapshot), prepared.outputs)
            if problems:
                result.error = "outputs differ from the unfused kernels: " + "; ".join(problems[:3])
                return result
            result.verified = True
            result.time = self.time(lambda: prepared())
        except SymbolError:
            raise  # the user's symbol data, the same for every candidate: say so once, loudly
        except CompileError as err:
            result.error = f"compile failed: {err.message}\n{err.log.strip()[:2000]}"
        except (LaunchError, HFuseError) as err:
            result.error = str(err)
        return result

    def run(self, candidates: Sequence[Candidate], pool: futures.Executor) -> list[CandidateResult]:
        jobs = [(c, pool.submit(self.build, c)) for c in candidates]
        results = []
        for candidate, job in jobs:
            self.progress.step(candidate.label)
            result = self.measure(candidate, job)
            self.progress.result(result)
            results.append(result)
        return results


@dataclass(frozen=True)
class _FrontEnd:
    """The tuning request as this GPU compiles it, run through the front end once: the
    cache key reads the headers it found, and every candidate is generated from ``unit``."""

    limits: DeviceLimits
    options: CompileOptions
    specs: list[KernelSpec]
    sources: dict[str, str]
    unit: PreparedUnit

    @classmethod
    def of(cls, launches: Sequence[KernelLaunch], options: CompileOptions, limits: DeviceLimits) -> "_FrontEnd":
        arch = limits.arch
        # the device pass modelled is this GPU's, for the request and for a kernel's own options
        specs = [replace(l.kernel, options=l.kernel.options.with_arch(arch)) if l.kernel.options else l.kernel
                 for l in launches]
        sources = {str(l.kernel.file): read_source(l) for l in launches}
        device = options.with_arch(arch)
        return cls(limits, device, specs, sources, prepare_unit(specs, sources=sources, options=device))

    def key(self, launches: Sequence[KernelLaunch], settings: TuneSettings) -> str:
        # editing a header a kernel includes must miss the cache
        return cache_key(
            gpu=self.limits.name, driver=self.limits.driver_version, sources=list(self.sources.values()),
            launches=[describe_launch(l) for l in launches], settings=settings.to_dict(),
            options=self.options.to_dict(), headers=header_digests(self.unit.headers),
        )


def tune(
    launches: Sequence[KernelLaunch],
    settings: TuneSettings = TuneSettings(),
    *,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: bool = True,
    options: CompileOptions | None = None,
) -> Plan:
    """Find the fastest verified fusion of ``launches`` on this GPU, or decide not to fuse.

    ``options`` are nvcc's ``-I/-D/-U/-include/-std`` for the sources; the device pass
    modelled (``__CUDA_ARCH__``) is always this GPU's, whatever ``options.arch`` says.
    """
    if len(launches) < 2:
        raise HFuseError("tuning needs at least two kernel launches")
    require_gpu()
    front_end = _FrontEnd.of(launches, options or NO_OPTIONS, DeviceLimits.current())
    limits = front_end.limits
    key = front_end.key(launches, settings)
    cache = PlanCache(cache_dir) if use_cache else None
    if cache is not None and (cached := cache.get(key)) is not None:
        return cached
    # Compiled kernels are kept beside the plans: an original tuned again beside another
    # partner, or a candidate of an interrupted run, is not compiled twice.
    binaries = BinaryCache(cache.directory / "binaries") if cache is not None else None
    with Progress(enabled=progress) as bar:
        session = _Session(launches, settings, bar, front_end, binaries)
        baselines = session.baselines()
        originals = [p.kernel.resources for p in session.originals]
        first = enumerate_candidates(
            session.specs,
            limits=limits,
            kernel_registers=[r.registers for r in originals],
            fused_smem=sum(r.static_smem for r in originals) + sum(l.smem_for() for l in launches),
            fused_threads=settings.fused_threads,
            granularity=settings.granularity,
            caps=settings.caps,
            neighbours=settings.neighbour_caps,
        )
        with futures.ThreadPoolExecutor(max_workers=settings.workers) as pool:
            bar.start(len(first))
            results = session.run(first, pool)
            best = fastest_verified(results)
            extra: list[Candidate] = []
            if best is not None and settings.refine:
                extra += refine_around(best.candidate, session.specs)
            if best is not None and settings.balance_grids and any(l.grid_free for l in launches):
                alone = [t.median_ms for t in baselines.alone.values()]
                grids = balance_grids(alone, [l.grid_for(b) for l, b in zip(launches, best.candidate.blocks)],
                                      best.candidate.blocks, [l.grid_free for l in launches])
                if any(g is not None for g in grids):
                    extra.append(with_grids(best.candidate, grids))
                    extra += [with_grids(replace(best.candidate, register_cap=c.candidate.register_cap, label=""), grids)
                              for c in results if c.verified and c.candidate.blocks == best.candidate.blocks
                              and c.candidate.register_cap != best.candidate.register_cap and c.candidate.strategy == "horizontal"]
            seen = {r.candidate.key for r in results}
            extra = [c for c in dict((c.key, c) for c in extra).values() if c.key not in seen]
            if extra:
                bar.start(len(extra))
                results += session.run(extra, pool)
        plan = _make_plan(session, results, baselines, settings, key, list(front_end.sources.values()))
    if cache is not None:
        cache.put(key, plan)
    return plan


def _make_plan(session: _Session, results: list[CandidateResult], baselines: Baselines, settings: TuneSettings,
            key: str, sources: list[str]) -> Plan:
    limits = session.limits
    verdict = decide(results, baselines, settings.min_gain)
    common = dict(
        kernels=[s.instance for s in session.specs],
        candidates=results,
        baselines=baselines,
        gpu=limits.name,
        driver=limits.driver_version,
        cuda_runtime=limits.runtime_version,
        source_hash=hashlib.sha256("\0".join(sources).encode()).hexdigest(),
        settings=settings.to_dict(),
        options=session.options,
        cache_key=key,
        symbols=[{n: describe_symbol(v) for n, v in l.symbols.items()} for l in session.launches],
        # the originals, so that a plan's launcher runs them when it does not fuse
        unfused_sources=[d.source for d in session.device_sources],
        unfused_names=[d.name_expression for d in session.device_sources],
        decision=verdict.decision,
        reason=verdict.reason,
        speedup=verdict.speedup,
    )
    best = verdict.best
    if verdict.decision != "fuse" or best is None:
        # a declined plan launches the originals with their own shapes
        return Plan(blocks=[l.kernel.block for l in session.launches], grids=[l.grid_for() for l in session.launches],
                    smems=[l.smem_for() for l in session.launches], **common)
    made = session.build(best.candidate)  # deterministic: same text as the measured one
    launches = session._launches_for(best.candidate)
    packed = made.fused.pack([l.args for l in launches], [l.grid_for() for l in launches], [l.smem_for() for l in launches])
    return Plan(
        strategy=best.candidate.strategy,
        blocks=list(best.candidate.blocks),
        register_cap=best.candidate.register_cap,
        fused_block=packed.block,
        grid=packed.grid,
        grids=[l.grid_for() for l in launches],
        shared_mem=packed.shared_mem,
        smems=[l.smem_for() for l in launches],
        chosen=best.label,
        fused_name=made.fused.name_expression,
        fused_source=made.fused.source,
        symbol_names=[dict(m) for m in made.fused.symbol_names],
        **common,
    )
