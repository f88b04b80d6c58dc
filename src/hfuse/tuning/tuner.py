"""The search (paper Algorithm 2, extended): measure, build, verify, time, choose.

1. Baselines on the tuning inputs: each kernel alone, the kernels on concurrent streams
   (the paper's native baseline), as a CUDA graph with parallel branches, one after
   another on one stream, and on concurrent streams with grid-stride kernels cut to k
   blocks per SM so that all stay resident (``coresident``, k tuned).
2. Candidates: the stages of ``search.SCHEDULE`` in order (every layout's proposals,
   under register policies where they ask for them; then around the best).
3. Each candidate is generated and compiled on threads here while the GPU measures
   earlier ones; then it is run once on the tuning inputs and its outputs are compared
   with the unfused kernels' outputs at the same block shapes. A candidate that does not
   compile, fails to launch or computes something else is recorded with its error and
   never timed. Kernels run where the measurement backend says (``backends``; by
   default a worker process under time limits, ``isolation``): a candidate that hangs is
   recorded as ``timeout``, one that faults as ``crashed``, and the search goes on in a
   fresh worker. Compiles run on threads here, or wherever a ``runner`` sends them (a
   pool of processes, Ray tasks). Every measurement is journaled as it is taken
   (``journal``), so a killed run resumes without measuring anything twice.
4. The fastest verified candidate, of any layout, is chosen if it beats the fastest unfused way
   (serial, two streams, a graph or co-resident streams) by more than ``min_gain``;
   otherwise the plan says "do not fuse", with the numbers (``decision``).
"""
from __future__ import annotations

import concurrent.futures as futures
import contextlib
import hashlib
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Sequence

from ..api import FusedKernel, PreparedUnit, device_source
from ..api import prepare as prepare_unit
from ..errors import HFuseError
from ..frontend.options import NO_OPTIONS, CompileOptions
from ..launch import KernelLaunch, describe_symbol
from ..layouts import LAYOUTS
from ..fusion import Fusion
from ..runtime.binary_cache import BinaryCache
from ..runtime.binary import CompiledBinary, CompileError, KernelResources
from ..runtime.compile import Compiler, CompileRunner, nvrtc_version, toolchain_for
from ..runtime.nvcc_runner import nvcc_version
from ..runtime.device import DeviceLimits, require_gpu
from ..runtime.execute import read_source
from ..runtime.jobs import LaunchJob, job_of
from ..runtime.occupancy import occupancy
from ..runtime.sanitizer import TOOLS, SanitizerResult, Tool
from ..runtime.symbols import (
    SymbolError,
    compile_with_symbols,
    fused_symbol_names,
    fused_symbols,
    present_symbols,
)
from ..runtime.transfer import arrays_of_launches, save_image
from ..spec import Dim3, KernelSpec
from .cache import PlanCache, cache_key, describe_launch, header_digests
from .candidates import Candidate, dedupe
from .backends import MeasureBackend, Measuring, SessionInputs, default_backend
from .decision import decide
from .isolation import TimeLimits, WorkerSetup
from .journal import RunJournal
from .coresident import co_resident_grids, resident_ks
from .measure import CoResidentRequest, MeasureRequest, MeasureSettings
from .plan import Baselines, CandidateResult, Plan
from .progress import Progress
from .search import SCHEDULE, SearchState
from ..registers import WarpgroupRegisters
from .sanitize import sanitize as run_sanitizers

SETMAXNREG_IGNORED = re.compile(r"C7508|setmaxnreg[^\n]*ignored", re.IGNORECASE)
"""ptxas's warning when it cannot tell a kernel's register count on entry: the budgets
would silently not apply, so such a candidate is a compile failure."""


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
    warpgroup_registers: bool = True
    """On Hopper, also try per-part register budgets (``setmaxnreg``, sm_90a) for partitions
    of whole warpgroups whose heaviest part the uniform count would cut."""
    isolate: bool = True
    """Verify and time candidates in a worker process, so that one that deadlocks is stopped
    (``timeout``) and one that faults (``crashed``) cannot take this process down."""
    time_limit_factor: float = 20.0
    """A candidate's run may take this many times the slowest original kernel alone ..."""
    time_limit_floor_s: float = 2.0
    """... and at least this long, before it is deemed hung."""
    layouts: tuple[str, ...] | None = None
    """The layouts searched, by name (``hfuse.layouts.LAYOUTS``); None: every one."""

    def __post_init__(self) -> None:
        if self.layouts is not None:
            names = (self.layouts,) if isinstance(self.layouts, str) else tuple(self.layouts)
            unknown = [n for n in names if n not in LAYOUTS]
            if unknown or not names:
                raise HFuseError(f"unknown layouts in the tune settings: {', '.join(unknown) or '(none given)'}",
                                 hint=f"known: {', '.join(LAYOUTS)}")
            object.__setattr__(self, "layouts", names)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["layouts"] = list(self.layouts) if self.layouts is not None else None
        return data


@dataclass
class _Built:
    fused: FusedKernel
    binary: CompiledBinary


class _Session:
    """One tuning run: generates and compiles what is measured, and hands it to a measurer
    (no globals: made and dropped by ``tune``). Nothing here runs a kernel."""

    def __init__(self, launches: Sequence[KernelLaunch], settings: TuneSettings, progress: Progress,
                 front_end: "_FrontEnd", binaries: BinaryCache | None = None, runner: CompileRunner | None = None):
        self.launches = list(launches)
        self.settings = settings
        self.progress = progress
        self.limits = front_end.limits
        self.options = front_end.options
        """The user's options, for this GPU's device pass (``#if __CUDA_ARCH__``)."""
        self.specs = front_end.specs
        self.unit = front_end.unit
        # The originals are compiled from their device side alone (a sample's main() and
        # host headers never reach NVRTC).
        self.device_sources = [device_source(s, sources=front_end.sources, options=self.options) for s in self.specs]
        # Every source compiled here (fused or device side) has the -include files inlined
        # already; the fused ones keep the headers the device sides keep.
        self.compiler = Compiler.for_sources(self.options, [d.source for d in self.device_sources],
                                             limits=self.limits, cache=binaries, runner=runner)
        if self.compiler.toolchain == "nvcc":
            why = toolchain_for([d.source for d in self.device_sources], self.options)[1]
            progress.note(f"compiling with nvcc, not NVRTC: {why} (each compile takes seconds, not milliseconds)")
        self.table = arrays_of_launches(self.launches)
        self.outputs = self.table.refs([l.args[o.index] for l in self.launches for o in l.outputs])
        self._originals: dict[tuple[int, Dim3], LaunchJob] = {}
        self.built: dict[Fusion, _Built] = {}
        """Every candidate built, by its fusion."""
        # Hopper's arch-specific target, for candidates with per-part budgets (setmaxnreg)
        self.sm90a_compiler = (Compiler.for_sources(self.options, [d.source for d in self.device_sources],
                                                    arch=self.limits.arch + "a", limits=self.limits, cache=binaries,
                                                    runner=runner)
                               if self.limits.compute_capability == (9, 0) else None)

    def measure_settings(self) -> MeasureSettings:
        s = self.settings
        return MeasureSettings(self.limits, warmup_ms=s.warmup_ms, rep_ms=s.rep_ms, flush_l2=s.flush_l2)

    def inputs(self, key: str, recipe: Any = None) -> SessionInputs:
        """What a measurement backend is given for this session (``key``: its cache key;
        ``recipe``: how its launches were made, if known)."""
        s = self.settings
        return SessionInputs("+".join(l.name for l in self.launches), key, self.table.arrays, self.outputs,
                             self.measure_settings(),
                             TimeLimits(run_factor=s.time_limit_factor, run_floor_s=s.time_limit_floor_s), recipe)

    # -- originals -------------------------------------------------------------------
    def original(self, index: int, block: Dim3) -> LaunchJob:
        """The ``index``-th unfused kernel at ``block``, compiled from its device source."""
        key = (index, block)
        if key not in self._originals:
            unfused = self.device_sources[index]
            launch = self.launches[index].with_block(block)
            name = unfused.name_expression
            written = self.unit.kernels[index].writes  # compared after each run, as the outputs are
            if launch.symbols or written:  # a symbol it does not define is the user's error, said here
                binary = compile_with_symbols(self.compiler, unfused.source, name, [*launch.symbols, *written],
                                              kernel=launch.name)
            else:
                binary = self.compiler.compile(unfused.source, [name])
            self._originals[key] = job_of(
                launch.name, binary, name, grid=launch.grid_for(block), block=block, shared_mem=launch.smem_for(block),
                args=launch.args, outputs=launch.outputs, output_arrays=[launch.args[o.index] for o in launch.outputs],
                table=self.table, symbols=launch.symbols, variables=written)
        return self._originals[key]

    def originals(self) -> list[LaunchJob]:
        return [self.original(i, l.kernel.block) for i, l in enumerate(self.launches)]

    def co_resident_jobs(self, resources: Sequence[KernelResources]) -> dict[int, tuple[LaunchJob, ...]]:
        """The originals with grid-stride kernels cut to ``k`` blocks per SM, for each ``k``
        at which a block of every kernel fits on an SM together (none without a grid-stride kernel)."""
        if not any(l.grid_free for l in self.launches):
            return {}
        originals = self.originals()
        fits = [occupancy(self.limits, r.registers, job.block.size, r.static_smem, job.shared_mem).blocks_per_sm
                for r, job in zip(resources, originals)]
        out = {}
        for k in resident_ks(fits):
            grids = co_resident_grids([j.grid for j in originals], [l.grid_free for l in self.launches],
                                      self.limits.sm_count, k)
            if grids != [j.grid for j in originals]:
                out[k] = tuple(replace(job, grid=grid) for job, grid in zip(originals, grids))
        return out

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

    def build(self, candidate: Candidate, name: str | None = None) -> _Built:
        """Generate and compile (runs on a worker thread: no CUDA calls here); ``name``: the
        fused kernel's, if not the default."""
        fused = self.unit.emit(candidate.fusion, name=name, barrier_form=self.settings.barrier_form)  # type: ignore[arg-type]
        # The fused names of the symbols given data and of the variables the parts write (``&name``
        # expressions for their lowered names).
        symbols = [*fused_symbol_names(fused.symbol_names, [l.symbols for l in self.launches], fused.source),
                   *(v for written in fused.written_variables for v in written)]
        budgets = isinstance(candidate.register_cap, WarpgroupRegisters)
        if budgets and self.sm90a_compiler is None:
            raise HFuseError("per-part register budgets (setmaxnreg) need a Hopper GPU (sm_90a)")
        binary = compile_with_symbols(self.sm90a_compiler if budgets else self.compiler, fused.source,
                                      fused.name_expression, symbols, kernel=fused.name, optional=True)
        if budgets and SETMAXNREG_IGNORED.search(binary.log):
            raise CompileError("ptxas ignored setmaxnreg (it could not tell the register count on entry)", binary.log)
        return _Built(fused, binary)

    def request(self, candidate: Candidate, made: _Built) -> MeasureRequest:
        """What a measurer needs to verify and time a built candidate."""
        launches = self._launches_for(candidate)
        # Every part's __constant__/__device__ data under the fused names, copied into the
        # candidate's module before it runs (verification and timing alike).
        symbols = present_symbols(made.binary, fused_symbols(
            made.fused.symbol_names, [l.symbols for l in launches], [l.name for l in launches], made.fused.source))
        packed = made.fused.pack([l.args for l in launches], [l.grid_for() for l in launches],
                                 [l.smem_for() for l in launches], self.limits.sm_count)
        fused = job_of(candidate.label, made.binary, made.fused.name_expression, grid=packed.grid, block=packed.block,
                       shared_mem=packed.shared_mem, args=packed.args,
                       outputs=[o for l in launches for o in l.outputs],
                       output_arrays=[l.args[o.index] for l in launches for o in l.outputs],
                       table=self.table, symbols=symbols,
                       variables=[v for written in made.fused.written_variables for v in written])
        references = tuple(self.original(i, b) for i, b in enumerate(candidate.blocks))
        policy = candidate.register_cap
        entry = policy.entry(packed.block.size, self.limits.regs_per_sm) if isinstance(policy, WarpgroupRegisters) else None
        return MeasureRequest(candidate, fused, references, entry_registers=entry)

    def measure(self, candidate: Candidate, built: futures.Future, measurer: Measuring) -> CandidateResult:
        try:
            made = built.result()
            self.built[candidate.fusion] = made  # the plan reuses the winner's, never builds it again
            request = self.request(candidate, made)
        except SymbolError:
            raise  # the user's symbol data, the same for every candidate: say so once, loudly
        except CompileError as err:
            return CandidateResult(candidate, error=f"compile failed: {err.message}\n{err.log.strip()[:2000]}",
                                   failure="compile")
        except HFuseError as err:
            return CandidateResult(candidate, error=str(err), failure="launch")
        return measurer.measure(request)

    def run(self, candidates: Sequence[Candidate], pool: futures.Executor, measurer: Measuring,
            journal: RunJournal | None = None, recorded: dict | None = None) -> list[CandidateResult]:
        """Builds ``candidates`` on ``pool`` and measures them in order; those ``recorded``
        (by key, from a journal) are taken as they are, neither built nor measured again."""
        recorded = recorded or {}
        jobs = [(c, None if c.key in recorded else pool.submit(self.build, c)) for c in candidates]
        results = []
        for candidate, job in jobs:
            self.progress.step(candidate.label)
            if job is None:
                result = replace(recorded[candidate.key], candidate=candidate)
            else:
                result = self.measure(candidate, job, measurer)
                if journal is not None:
                    journal.candidate(result)
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
        # editing a header a kernel includes must miss the cache, and so must another compiler
        toolkit = f"{self.limits.arch} nvrtc {'.'.join(map(str, nvrtc_version()))}"
        if toolchain_for(list(self.sources.values()), self.options)[0] == "nvcc":  # (it may compile these sources)
            toolkit += f" nvcc {'.'.join(map(str, nvcc_version()))}"
        return cache_key(
            gpu=self.limits.name, toolkit=toolkit,
            sources=list(self.sources.values()),
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
    sanitize: bool = False,
    backend: MeasureBackend | None = None,
    runner: CompileRunner | None = None,
    recipe: Any = None,
) -> Plan:
    """Find the fastest verified fusion of ``launches`` on this GPU, or decide not to fuse.

    ``options`` are nvcc's ``-I/-D/-U/-include/-std`` for the sources; the device pass
    modelled (``__CUDA_ARCH__``) is always this GPU's, whatever ``options.arch`` says.
    ``sanitize`` also runs the chosen fused kernel under compute-sanitizer (``check``)
    and keeps the verdicts in ``plan.sanitizer``. ``backend`` measures (default: a worker
    process of its own, or this process when ``settings.isolate`` is off); ``runner``
    runs the compiles, NVRTC's or nvcc's (default: threads of this process). ``recipe``
    says how ``launches`` were made (``batch.inputs``: an object whose ``launches()`` makes
    them again, with the same layout): an isolated worker then makes its own inputs
    instead of being sent a copy.
    """
    plan = _tune(launches, settings, cache_dir=cache_dir, use_cache=use_cache, progress=progress, options=options,
                 backend=backend or default_backend(settings.isolate), runner=runner, recipe=recipe)
    if sanitize and plan.should_fuse and not plan.sanitizer:
        plan.sanitizer = check(launches, plan, options=options)
        if use_cache and plan.cache_key:
            PlanCache(cache_dir).put(plan.cache_key, plan)
    return plan


def check(launches: Sequence[KernelLaunch], plan: Plan, *, tools: Sequence[Tool] = TOOLS,
          options: CompileOptions | None = None) -> list[SanitizerResult]:
    """The plan's fused kernel and the original kernels under each compute-sanitizer tool,
    on ``launches``' inputs (the launches the plan was tuned for, or others like them)."""
    if not plan.should_fuse:
        raise HFuseError("the plan does not fuse: there is no fused kernel to check")
    chosen = next((r.candidate for r in plan.candidates if r.label == plan.chosen), None)
    if chosen is None:
        raise HFuseError(f"the plan's chosen candidate '{plan.chosen}' is not among its candidates")
    known = {f.name for f in fields(TuneSettings)}
    settings = TuneSettings(**{k: v for k, v in plan.settings.items() if k in known})
    return sanitize_candidate(launches, chosen, settings, tools=tools, options=options or plan.options,
                              expected_source=plan.fused_source)


def sanitize_candidate(launches: Sequence[KernelLaunch], candidate: Candidate, settings: TuneSettings = TuneSettings(),
                       *, tools: Sequence[Tool] = TOOLS, options: CompileOptions | None = None,
                       expected_source: str | None = None) -> list[SanitizerResult]:
    """One fusion of ``launches`` (and the originals, for comparison) under each tool."""
    require_gpu()
    front_end = _FrontEnd.of(launches, options or NO_OPTIONS, DeviceLimits.current())
    session = _Session(launches, settings, Progress(enabled=False), front_end)
    made = session.build(candidate)
    if expected_source is not None and made.fused.source != expected_source:
        raise HFuseError("these sources no longer generate the plan's fused kernel", hint="tune them again")
    request = session.request(candidate, made)
    image = save_image(session.table.arrays)
    try:
        return run_sanitizers(request, WorkerSetup(image, session.outputs, session.measure_settings()), tools)
    finally:
        image.remove()


def _tune(
    launches: Sequence[KernelLaunch],
    settings: TuneSettings,
    *,
    cache_dir: str | Path | None,
    use_cache: bool,
    progress: bool,
    options: CompileOptions | None,
    backend: MeasureBackend,
    runner: CompileRunner | None,
    recipe: Any = None,
) -> Plan:
    if len(launches) < 2:
        raise HFuseError("tuning needs at least two kernel launches")
    front_end = _FrontEnd.of(launches, options or NO_OPTIONS, backend.device_limits())
    limits = front_end.limits
    key = front_end.key(launches, settings)
    cache = PlanCache(cache_dir) if use_cache else None
    if cache is not None and (cached := cache.get(key)) is not None:
        return cached
    # Compiled kernels are kept beside the plans: an original tuned again beside another
    # partner, or a candidate of an interrupted run, is not compiled twice.
    binaries = BinaryCache(cache.directory / "binaries") if cache is not None else None
    journal = RunJournal(cache.directory / "partial" / f"{key}.jsonl") if cache is not None else None
    recorded = journal.read() if journal is not None else None
    with Progress(enabled=progress) as bar, contextlib.ExitStack() as stack:
        session = _Session(launches, settings, bar, front_end, binaries, runner)
        measurer = stack.enter_context(backend.open(session.inputs(key, recipe)))
        if recorded is not None and recorded.baselines is not None:
            bar.note(f"resuming: {len(recorded.results)} candidates measured before")
            baselines, originals = recorded.baselines, recorded.resources
            measurer.resume(baselines)
        else:
            baselines, originals = _measure_unfused(session, measurer, bar)
            if journal is not None:
                journal.unfused(baselines, originals)
        pool = futures.ThreadPoolExecutor(max_workers=settings.workers)
        # On Ctrl-C or an error, compiles not started yet are dropped rather than waited for.
        stack.callback(pool.shutdown, wait=True, cancel_futures=True)
        state = SearchState(
            specs=tuple(session.specs), launches=tuple(launches), settings=settings, limits=limits,
            kernel_registers=tuple(r.registers for r in originals),
            fused_smem=sum(r.static_smem for r in originals) + sum(l.smem_for() for l in launches),
            alone_ms=tuple(t.median_ms for t in baselines.alone.values()),
            whole_blocks=session.unit.needs_whole_blocks,
        )
        results: list[CandidateResult] = []
        for stage in SCHEDULE:
            seen = {r.candidate.key for r in results}
            proposed = [c for c in dedupe(stage.propose(replace(state, results=tuple(results)))) if c.key not in seen]
            if proposed:
                bar.start(len(proposed))
                results += session.run(proposed, pool, measurer, journal, recorded.results if recorded else None)
        plan = _make_plan(session, results, baselines, settings, key, list(front_end.sources.values()))
    if cache is not None:
        cache.put(key, plan)
        journal.remove()  # type: ignore[union-attr]
    return plan


def _measure_unfused(session: _Session, measurer: Measuring, bar: Progress) -> tuple[Baselines, tuple]:
    """The unfused ways (co-resident streams too, where a kernel is grid-stride) and each
    original kernel's resources."""
    bar.note("measuring the unfused kernels")
    unfused = measurer.unfused(session.originals())
    baselines, originals = unfused.baselines, unfused.resources
    co_resident = session.co_resident_jobs(originals)
    if co_resident:
        bar.note(f"measuring co-resident streams ({', '.join(str(k) for k in co_resident)} blocks per SM)")
        report = measurer.co_resident(CoResidentRequest(tuple(session.originals()), co_resident))
        if report.timings:
            k = min(report.timings, key=lambda v: report.timings[v].median_ms)
            baselines = replace(baselines, co_resident=report.timings[k], co_resident_k=k,
                                co_resident_grids=[job.grid for job in co_resident[k]])
    return baselines, tuple(originals)


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
        # a declined plan launches the originals with their own shapes (and the grids of the
        # fastest unfused way)
        grids = [l.grid_for() for l in session.launches]
        if baselines.fastest_way() == "co_resident":
            grids = list(baselines.co_resident_grids)
        return Plan(blocks=[l.kernel.block for l in session.launches], grids=grids,
                    smems=[l.smem_for() for l in session.launches], **common)
    made = session.built.get(best.candidate.fusion)  # what was measured, not built a second time ...
    if made is None:  # ... unless a resumed run measured it before (its binary is in the cache)
        made = session.build(best.candidate)
    launches = session._launches_for(best.candidate)
    packed = made.fused.pack([l.args for l in launches], [l.grid_for() for l in launches],
                             [l.smem_for() for l in launches], limits.sm_count)
    return Plan(
        layout=best.candidate.layout,
        blocks=list(best.candidate.blocks),
        register_cap=best.candidate.register_cap,
        fused_block=packed.block,
        grid=packed.grid,
        grids=[l.grid_for() for l in launches],
        shared_mem=packed.shared_mem,
        smems=[l.smem_for() for l in launches],
        smem_alignments=[sig.smem_align for sig in made.fused.signatures],
        chosen=best.label,
        fused_name=made.fused.name_expression,
        fused_source=made.fused.source,
        symbol_names=[dict(m) for m in made.fused.symbol_names],
        **common,
    )
