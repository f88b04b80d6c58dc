"""Launch what a plan decided, from a program: ``plan.launcher()(args_per_kernel, ...)``."""
from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

from ..codegen.launcher import pack_launch
from ..errors import HFuseError, Location
from ..launch import check_symbols
from ..runtime.compile import Compiler
from ..runtime.symbols import SymbolError, compile_with_symbols, fused_symbol_names, fused_symbols, present_symbols
from ..spec import Dim3
from .plan import Plan

_LAUNCHER_MODULES = itertools.count()


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
        if isinstance(symbols, Mapping) or len(symbols) != len(plan.kernels):
            raise HFuseError(
                f"symbols must be a list with one mapping (or None) per kernel, {len(plan.kernels)} in all "
                f"({', '.join(plan.kernels)})",
                hint='e.g. symbols=[{"coeffs": table_a}, {}]',
            )
        checked = [check_symbols(m, name) for m, name in zip(symbols, plan.kernels)]
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
                hint="pass it: plan.launcher(symbols=[...]) or launcher(args, symbols=[...]), one mapping per kernel",
            )
        return fused_symbols(plan.symbol_names, self.given, plan.kernels, plan.fused_source)


class PlanLauncher:
    """Compiles the plan's fused kernel once and launches it with the originals' arguments.

    ``args_per_kernel`` are the arguments each original kernel takes, in plan order;
    ``grids`` and ``smems`` default to the ones the plan was tuned with.

    ``symbols`` (here or on a call) is each kernel's ``__constant__``/``__device__`` data,
    one mapping per kernel as in ``KernelLaunch.symbols``. It goes into the launcher's own
    module before the first launch, and again (all of it) when a call brings data; copying
    synchronises the device. A plan tuned with symbol data needs data for the same
    symbols before it launches.
    """

    def __init__(self, plan: Plan, compiler: Compiler | None = None, *,
                 symbols: Sequence[Mapping[str, Any] | None] | None = None):
        if not plan.should_fuse:
            raise HFuseError(f"the plan says not to fuse ({plan.reason}); launch the kernels as before")
        self.plan = plan
        self.compiler = compiler or Compiler()
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

    def _own_module(self) -> None:
        """A module no other launcher or kernel shares, since this one's data may change."""
        if not self._private:
            self.kernel = self.compiler.load(self._binary, self.plan.fused_name,
                                             instance=f"launcher{next(_LAUNCHER_MODULES)}")
            self._private = True

    def set_symbols(self, symbols: Sequence[Mapping[str, Any] | None]) -> None:
        """New data for some symbols (one mapping or None per kernel); in the module before the next launch."""
        if self.symbols.update(symbols):
            self._stale = True

    def sync_symbols(self) -> None:
        """Copies pending symbol data into the module now (the next launch does it otherwise)."""
        if self._stale:
            data = self.symbols.fused()  # raises for tuned symbols without data, before anything is loaded
            # Leave out what the fused source turned out not to define (its kernels do not read it).
            present = present_symbols(self._binary, data)
            data = {n: v for n, v in data.items() if n in present or n not in self._compiled}
            self._own_module()
            # Always copied, as cudaMemcpyToSymbol would: a kernel may have written to a __device__ one.
            self.kernel.set_symbols(data, label=self.plan.fused_name, force=True)
            self._stale = False

    def __call__(self, args_per_kernel: Sequence[Sequence[Any]], *, grids: Sequence[Dim3] | None = None,
                 smems: Sequence[int] | None = None, stream: Any = None,
                 symbols: Sequence[Mapping[str, Any] | None] | None = None) -> None:
        plan = self.plan
        if len(args_per_kernel) != len(plan.kernels):
            raise HFuseError(f"the plan fuses {len(plan.kernels)} kernels ({', '.join(plan.kernels)}); "
                             f"{len(args_per_kernel)} argument lists given")
        if symbols is not None:
            self.set_symbols(symbols)
        self.sync_symbols()
        launch = pack_launch(plan.fused_block.size, args_per_kernel, grids or plan.grids,
                             smems if smems is not None else plan.smems)
        self.kernel.launch(launch.grid, launch.block, launch.args, launch.shared_mem, stream)
