"""Launch what a plan decided, from a program: ``hfuse.launcher(plan)(args_per_kernel, ...)``.

One call signature whatever the decision: a plan that fuses launches its fused kernel
(``FusedLauncher``), one that declines launches the original kernels in the fastest
unfused way the tuner measured (``UnfusedLauncher``: one stream, or forked onto two
streams, which is also how a CUDA graph's parallel branches run). Arguments may be CuPy
arrays and NumPy scalars, or any framework's CUDA arrays (``runtime.arrays``).
"""
from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

from ..codegen.launcher import pack_launch
from ..errors import HFuseError, Location
from ..launch import check_symbols
from ..runtime.arrays import as_kernel_args
from ..runtime.loaded import BoundLaunch, CompiledKernel
from ..runtime.compile import Compiler
from ..runtime.device import DeviceLimits
from ..runtime.symbols import SymbolError, compile_with_symbols, fused_symbol_names, fused_symbols, present_symbols
from ..runtime.timing import StreamFork
from ..spec import Dim3
from .plan import Plan
from ..registers import WarpgroupRegisters

_LAUNCHER_MODULES = itertools.count()


def symbols_per_kernel(symbols: Sequence[Mapping[str, Any] | None], kernels: Sequence[str]) -> list[dict[str, Any]]:
    """One checked mapping per kernel (``None`` for none), or an error saying the shape wanted."""
    if isinstance(symbols, Mapping) or len(symbols) != len(kernels):
        raise HFuseError(f"symbols must be a list with one mapping (or None) per kernel, {len(kernels)} in all "
                         f"({', '.join(kernels)})", hint='e.g. symbols=[{"coeffs": table_a}, {}]')
    return [check_symbols(m, name) for m, name in zip(symbols, kernels)]


class PlanSymbols:
    """The ``__constant__``/``__device__`` data a plan's launcher holds, per kernel (CPU only).

    ``update`` takes one mapping (or None) per kernel, in plan order, and merges it into
    what was given before (a symbol given again replaces its data). ``fused`` is the data
    under the fused kernel's names, after checking every symbol the plan was tuned with
    has data and no symbol is one the fused kernel lacks and the plan never saw.
    """

    def __init__(self, plan: Plan):
        self.plan = plan
        self.given: list[dict[str, Any]] = [{} for _ in plan.kernels]

    def _tuned(self, index: int) -> Mapping[str, Any]:
        return self.plan.symbols[index] if index < len(self.plan.symbols) else {}

    def update(self, symbols: Sequence[Mapping[str, Any] | None] | None) -> bool:
        """Merges new data; True when something was given."""
        if symbols is None:
            return False
        plan = self.plan
        checked = symbols_per_kernel(symbols, plan.kernels)
        known = fused_symbol_names(plan.symbol_names, [list(c) for c in checked], plan.fused_source)
        reachable = {(i, n) for owners in known.values() for i, n in owners}
        for index, mapping in enumerate(checked):
            for name in mapping:
                if (index, name) not in reachable and name not in self._tuned(index):
                    raise SymbolError(
                        f"the fused kernel has no __constant__ or __device__ variable '{name}'",
                        Location(kernel=plan.kernels[index]),
                        hint="spell it as the kernel's source does, qualified by its namespace; the plan was tuned "
                        f"with: {', '.join(self._tuned(index)) or 'no symbols'}",
                    )
        for given, mapping in zip(self.given, checked):  # all checked first: an error changes nothing
            given.update(mapping)
        return any(checked)

    def names(self) -> dict[str, list[tuple[int, str]]]:
        """Fused name -> owners, for every symbol tuned, given, or renamed (to compile ``&name`` for)."""
        renames = self.plan.symbol_names
        per_part = [set(self._tuned(i)) | set(self.given[i]) | set(renames[i] if i < len(renames) else ())
                    for i in range(len(self.plan.kernels))]
        return fused_symbol_names(renames, [sorted(p) for p in per_part], self.plan.fused_source)

    def fused(self) -> dict[str, Any]:
        """The data for the fused module. Reads CuPy values: call from the launching thread."""
        plan = self.plan
        missing = [(plan.kernels[i], n, d) for i in range(len(plan.kernels)) for n, d in self._tuned(i).items()
                   if n not in self.given[i]]
        if missing:
            kernel = missing[0][0]
            listed = ", ".join(f"'{n}' ({d.get('bytes', '?')} bytes)" for k, n, d in missing if k == kernel)
            raise SymbolError(
                f"the plan was tuned with data for {listed}, and none was given", Location(kernel=kernel),
                hint="pass it: hfuse.launcher(plan, symbols=[...]) or launcher(args, symbols=[...]), one mapping per kernel",
            )
        return fused_symbols(plan.symbol_names, self.given, plan.kernels, plan.fused_source)


def plan_compiler(plan: Plan) -> Compiler:
    """A compiler with the options the plan was tuned under (its sources, fused or unfused,
    already hold the -include files' contents: not again)."""
    # a fused kernel with per-part budgets (setmaxnreg) needs the arch-specific target, sm_90a
    arch = None
    if plan.should_fuse and isinstance(plan.register_cap, WarpgroupRegisters):
        arch = DeviceLimits.current().arch + "a"
    sources = [plan.fused_source] if plan.should_fuse else plan.unfused_sources
    return Compiler.for_sources(plan.options, sources, arch=arch)


def launcher_for(plan: Plan, compiler: Compiler | None = None, *,
                 symbols: Sequence[Mapping[str, Any] | None] | None = None) -> "PlanLauncher":
    """The launcher of what ``plan`` decided."""
    compiler = compiler or plan_compiler(plan)
    if plan.should_fuse:
        return FusedLauncher(plan, compiler, symbols=symbols)
    return UnfusedLauncher(plan, compiler, symbols=symbols)


class PlanLauncher:
    """Launches a plan's kernels as if launching the originals.

    ``args_per_kernel`` are the arguments each original kernel takes, in plan order;
    ``grids`` and ``smems`` default to the ones the plan was tuned with; ``stream`` is a
    CuPy stream (``cupy.cuda.ExternalStream`` wraps another framework's), default CuPy's
    current one.

    ``symbols`` (here or on a call) is each kernel's ``__constant__``/``__device__`` data,
    one mapping per kernel as in ``KernelLaunch.symbols``. It goes into the launcher's own
    module(s) before the first launch, and again (all of it) when a call brings data;
    copying synchronises the device. A plan tuned with symbol data needs data for the same
    symbols before it launches.

    A launcher packs arguments into buffers of its own: call it from one thread at a time.
    """

    def __init__(self, plan: Plan, compiler: Compiler):
        self.plan = plan
        self.compiler = compiler

    def __call__(self, args_per_kernel: Sequence[Sequence[Any]], *, grids: Sequence[Dim3] | None = None,
                 smems: Sequence[int] | None = None, stream: Any = None,
                 symbols: Sequence[Mapping[str, Any] | None] | None = None) -> None:
        plan = self.plan
        if len(args_per_kernel) != len(plan.kernels):
            raise HFuseError(f"the plan has {len(plan.kernels)} kernels ({', '.join(plan.kernels)}); "
                             f"{len(args_per_kernel)} argument lists given")
        if symbols is not None:
            self.set_symbols(symbols)
        self.sync_symbols()
        self.launch([as_kernel_args(a) for a in args_per_kernel], [Dim3.of(g) for g in (grids or plan.grids)],
                    list(smems if smems is not None else plan.smems), stream)

    def set_symbols(self, symbols: Sequence[Mapping[str, Any] | None]) -> None:
        """New data for some symbols (one mapping or None per kernel); in the module(s) before the next launch."""
        raise NotImplementedError

    def sync_symbols(self) -> None:
        """Copies pending symbol data into the module(s) now (the next launch does it otherwise)."""
        raise NotImplementedError

    def launch(self, args_per_kernel: list[list[Any]], grids: list[Dim3], smems: list[int], stream: Any) -> None:
        """Launches with arguments CuPy can pass (``__call__`` checked and converted them);
        with Python ints for integer parameters too where ``direct_launch``."""
        raise NotImplementedError

    @property
    def direct_launch(self) -> bool:
        """Every kernel launches through the driver with packed arguments (``CompiledKernel.direct_launch``)."""
        raise NotImplementedError


class FusedLauncher(PlanLauncher):
    """Compiles the plan's fused kernel once and launches it with the originals' arguments."""

    def __init__(self, plan: Plan, compiler: Compiler | None = None, *,
                 symbols: Sequence[Mapping[str, Any] | None] | None = None):
        if not plan.should_fuse:
            raise HFuseError(f"the plan says not to fuse ({plan.reason})",
                             hint="hfuse.launcher(plan) launches the original kernels for such a plan")
        super().__init__(plan, compiler or plan_compiler(plan))
        self.symbols = PlanSymbols(plan)
        self.symbols.update(symbols)
        self._compiled = set(self.symbols.names())
        """The fused names compiled with ``&name`` (the others cannot be qualified names)."""
        self._binary = compile_with_symbols(self.compiler, plan.fused_source, plan.fused_name, self._compiled,
                                            kernel=plan.fused_name, optional=True)
        self._private = False
        self._stale = bool(any(plan.symbols) or any(self.symbols.given))
        """Symbol data not yet in the module: copied before the next launch."""
        if self._stale:
            self._own_module()
        else:
            self.kernel = self.compiler.load(self._binary, plan.fused_name)
        self._bound: dict[tuple, BoundLaunch] = {}
        """Launch shapes seen (grids, smems) -> the launch, hidden arguments bound."""

    def _sm_count(self) -> int | None:
        """This GPU's SMs, where the plan's layout sizes its grid by them (a persistent one)."""
        if self.plan.layout.blocks_per_sm(len(self.plan.blocks)) is None:
            return None
        return self.compiler.limits.sm_count

    def _own_module(self) -> None:
        """A module no other launcher or kernel shares, since this one's data may change."""
        if not self._private:
            self.kernel = self.compiler.load(self._binary, self.plan.fused_name,
                                             instance=f"launcher{next(_LAUNCHER_MODULES)}")
            self._private = True

    def set_symbols(self, symbols: Sequence[Mapping[str, Any] | None]) -> None:
        if self.symbols.update(symbols):
            self._stale = True

    def sync_symbols(self) -> None:
        if self._stale:
            data = self.symbols.fused()  # raises for tuned symbols without data, before anything is loaded
            # Leave out what the fused source turned out not to define (its kernels do not read it).
            present = present_symbols(self._binary, data)
            data = {n: v for n, v in data.items() if n in present or n not in self._compiled}
            self._own_module()
            # Always copied, as cudaMemcpyToSymbol would: a kernel may have written to a __device__ one.
            self.kernel.set_symbols(data, label=self.plan.fused_name, force=True)
            self._stale = False

    @property
    def direct_launch(self) -> bool:
        return self.kernel.direct_launch

    def launch(self, args_per_kernel: list[list[Any]], grids: list[Dim3], smems: list[int], stream: Any) -> None:
        shape = (tuple(grids), tuple(smems))
        bound = self._bound.get(shape)
        if bound is None or bound.kernel is not self.kernel:
            # the hidden parameters (each part's grid and shared-memory offset) depend only on the shape
            layout = self.plan.layout
            packed = pack_launch(self.plan.fused_block.size, [[] for _ in grids], grids, smems, layout.blocks_add_up,
                                 self.plan.smem_alignments, layout.grid_limit(len(grids), self._sm_count()))
            bound = self._bound[shape] = self.kernel.bind(packed.grid, packed.block, packed.shared_mem,
                                                          tail=packed.args, direct=True)
        bound([a for args in args_per_kernel for a in args], stream)


class UnfusedLauncher(PlanLauncher):
    """Runs the original kernels of a plan that declined, in the fastest unfused way it
    measured (``plan.unfused_way``): serial on the caller's stream, or forked onto one
    stream per kernel and joined back (a graph's parallel branches run the same way, and a
    graph captured around this call gets them as branches). For co-resident streams the
    plan's ``grids`` are the cut grids it measured."""

    def __init__(self, plan: Plan, compiler: Compiler | None = None, *,
                 symbols: Sequence[Mapping[str, Any] | None] | None = None):
        if len(plan.unfused_sources) != len(plan.kernels) or len(plan.blocks) != len(plan.kernels):
            raise HFuseError(f"the plan for {', '.join(plan.kernels)} does not hold the original kernels' sources "
                             "and launch shapes (made by an older hfuse)", hint="tune again to make a new plan")
        super().__init__(plan, compiler or plan_compiler(plan))
        tuned = [set(plan.symbols[i]) if i < len(plan.symbols) else set() for i in range(len(plan.kernels))]
        self._given: list[dict[str, Any]] = [{} for _ in plan.kernels]
        self._stale = [bool(t) for t in tuned]
        self.kernels: list[CompiledKernel] = []
        for i, (source, name) in enumerate(zip(plan.unfused_sources, plan.unfused_names)):
            binary = compile_with_symbols(self.compiler, source, name, tuned[i], kernel=plan.kernels[i], optional=True)
            instance = f"launcher{next(_LAUNCHER_MODULES)}" if tuned[i] else ""
            self.kernels.append(self.compiler.load(binary, name, instance=instance))
        self._tuned = tuned
        self._way = plan.unfused_way
        self._fork = StreamFork(len(plan.kernels)) if self._way != "serial" else None
        self._bound: dict[tuple[int, Dim3, int], BoundLaunch] = {}
        if symbols is not None:
            self.set_symbols(symbols)

    def set_symbols(self, symbols: Sequence[Mapping[str, Any] | None]) -> None:
        checked = symbols_per_kernel(symbols, self.plan.kernels)
        for i, mapping in enumerate(checked):
            if mapping and not self._tuned[i]:
                raise SymbolError("the plan was tuned without symbol data for this kernel, so its module was "
                                  "compiled without them", Location(kernel=self.plan.kernels[i]),
                                  hint="tune with the data (KernelLaunch.symbols) to launch with it")
        for i, mapping in enumerate(checked):
            if mapping:
                self._given[i].update(mapping)
                self._stale[i] = True

    def sync_symbols(self) -> None:
        for i, kernel in enumerate(self.kernels):
            if not self._stale[i]:
                continue
            missing = sorted(self._tuned[i] - set(self._given[i]))
            if missing:
                raise SymbolError(f"the plan was tuned with data for {', '.join(repr(m) for m in missing)}, and none "
                                  "was given", Location(kernel=self.plan.kernels[i]),
                                  hint="pass it: hfuse.launcher(plan, symbols=[...]) or launcher(args, symbols=[...])")
            kernel.set_symbols(self._given[i], label=self.plan.kernels[i], force=True)
            self._stale[i] = False

    @property
    def direct_launch(self) -> bool:
        return all(k.direct_launch for k in self.kernels)

    def launch(self, args_per_kernel: list[list[Any]], grids: list[Dim3], smems: list[int], stream: Any) -> None:
        bound = [self._bind(i, g, m) for i, (g, m) in enumerate(zip(grids, smems))]
        if self._fork is None:
            for launch, args in zip(bound, args_per_kernel):
                launch(args, stream)
        else:
            self._fork.launch_all([lambda s, f=f, a=a: f(a, s) for f, a in zip(bound, args_per_kernel)], stream)

    def _bind(self, index: int, grid: Dim3, smem: int) -> BoundLaunch:
        key = (index, grid, smem)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bound[key] = self.kernels[index].bind(grid, self.plan.blocks[index], smem, direct=True)
        return bound
