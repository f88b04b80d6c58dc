"""The Python API of the fusion compiler: ``fuse(...)`` returns a ``FusedKernel``."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import __version__
from .codegen.emit import assemble, header_comment
from .codegen.kernel import horizontal_kernel, vertical_kernel
from .codegen.launcher import FusedLaunch, launcher, pack_launch
from .codegen.preamble import BarrierForm
from .codegen.signature import PartSignature, part_signature
from .errors import HFuseError, Location
from .frontend.extract import load_source
from .frontend.model import Function, SourceFile
from .frontend.parse import first_error, line_of, parse
from .frontend.program import Program
from .spec import Dim3, KernelSpec
from .transform.analysis import ProgramFacts, check_kernel, close_over_calls
from .transform.context import PartContext
from .transform.partition import Part, Partition, Strategy, make_partition
from .transform.specialize import specialise_part
from .tune.regcap import RegisterCap


@dataclass(frozen=True)
class FusedKernel:
    """A generated fused kernel: its source and how to launch it."""

    source: str
    name: str
    name_expression: str
    """What to look the kernel up by (NVRTC name expression; equals ``name`` unless templated)."""
    partition: Partition
    register_cap: RegisterCap | None
    signatures: tuple[PartSignature, ...] = field(repr=False)

    @property
    def strategy(self) -> Strategy:
        return self.partition.strategy

    @property
    def parts(self) -> tuple[Part, ...]:
        return self.partition.parts

    @property
    def block(self) -> Dim3:
        return Dim3(self.partition.block_threads)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.source)
        return path

    def pack(self, args_per_kernel: Sequence[Sequence[Any]], grids: Sequence[Dim3], smems: Sequence[int]) -> FusedLaunch:
        """The fused launch for the given per-kernel arguments, grids and dynamic shared memory."""
        if not len(args_per_kernel) == len(grids) == len(smems) == len(self.parts):
            raise ValueError(f"expected {len(self.parts)} argument lists, grids and shared-memory sizes")
        for sig, args in zip(self.signatures, args_per_kernel):
            if len(args) != len(sig.names):
                raise HFuseError(
                    f"{len(args)} arguments given, the kernel takes {len(sig.names)} ({', '.join(sig.part.kernel.params[i].text for i in range(len(sig.names)))})",
                    Location(sig.part.kernel.file, sig.part.kernel.line, sig.part.spec.name),
                )
        return pack_launch(self.block.size, args_per_kernel, grids, smems)


def _sources(specs: Sequence[KernelSpec], sources: Mapping[str | Path, str] | None) -> list[SourceFile]:
    given = {Path(k): v for k, v in (sources or {}).items()}
    files: list[SourceFile] = []
    for spec in specs:
        if any(f.path == spec.file for f in files):
            continue
        files.append(load_source(spec.file, given.get(spec.file)))
    return files


def _check_parses(function: Function, spec: KernelSpec) -> None:
    tree = parse(function.text.encode())
    bad = first_error(tree.root_node)
    if bad is not None:
        line = function.line + line_of(bad) - 1
        snippet = bad.text.decode(errors="replace").splitlines()[0][:60] if bad.text else ""
        raise HFuseError(
            f"the kernel does not parse near '{snippet}'",
            Location(spec.file, line, spec.name),
            hint="hfuse parses CUDA C++ with tree-sitter; check this line compiles with nvcc",
        )


def _merge(files: list[SourceFile], specs: list[KernelSpec]) -> Program:
    try:
        return Program.merge(files)
    except HFuseError as err:  # name a kernel of the file the conflict is in
        owner = next((s for s in specs if s.file == err.where.file), None)
        if owner is not None and err.where.kernel is None:
            err.where.kernel = owner.name
        raise


def _analyse(program: Program, spec: KernelSpec, kernel: Function) -> ProgramFacts:
    """What the kernel and every helper it reaches do; refuses what cannot be fused."""
    facts = close_over_calls({**program.functions, kernel.name: [kernel]}, set(program.extern_shared))
    for name in facts.reachable(kernel.name):
        for fn in facts.facts[name]:
            _check_parses(fn.function, spec)
    check_kernel(kernel, facts)
    return facts


def _uses(facts: ProgramFacts, kernel: Function, what: str) -> bool:
    return any(getattr(f, what) for name in facts.reachable(kernel.name) for f in facts.facts[name])


def fuse(
    kernels: Sequence[KernelSpec],
    *,
    strategy: Strategy = "horizontal",
    register_cap: RegisterCap | None = None,
    name: str | None = None,
    barrier_form: BarrierForm = "barrier",
    sources: Mapping[str | Path, str] | None = None,
) -> FusedKernel:
    """Fuse ``kernels`` (two or more) into one kernel.

    ``sources`` maps a file path to its text for sources not on disk. Raises
    ``HFuseError`` (naming file, kernel and line) for input hfuse cannot fuse.
    """
    specs = list(kernels)
    if len(specs) < 2:
        raise HFuseError("fusion needs at least two kernels")
    if strategy not in ("horizontal", "vertical"):
        raise HFuseError(f"unknown strategy '{strategy}' (use 'horizontal' or 'vertical')")
    program = _merge(_sources(specs, sources), specs)
    found = [program.kernel(s.name, s.file) for s in specs]
    analyses = [_analyse(program, s, k) for s, k in zip(specs, found)]
    # a part needs a barrier id if it synchronises, or holds a thread block that could
    needs_barrier = [
        k.name in facts.has_barrier or _uses(facts, k, "cg_block") for k, facts in zip(found, analyses)
    ]
    partition = make_partition(specs, found, needs_barrier, strategy)
    suffix = "__hfused" if strategy == "horizontal" else "__vfused"
    fused_name = name or "_".join(dict.fromkeys(s.name for s in specs)) + suffix

    codes = []
    for part, facts in zip(partition.parts, analyses):
        ctx = PartContext(
            index=part.index,
            kernel=part.spec.name,
            barrier_id=part.barrier_id,
            threads=part.size,
            specialised=frozenset(facts.needs_context & set(facts.reachable(part.kernel.name))),
            extern_shared=tuple(program.extern_shared.items()),
        )
        codes.append(specialise_part(part.kernel, ctx, facts, {**program.functions, part.kernel.name: [part.kernel]}))
    sigs = [part_signature(part) for part in partition.parts]

    bounds = register_cap.attribute(partition.block_threads) if register_cap else ""
    emit_kernel = horizontal_kernel if strategy == "horizontal" else vertical_kernel
    kernel_text = emit_kernel(fused_name, partition, sigs, [c.body_name for c in codes], bounds)
    header = header_comment(fused_name, partition, sigs, f"register cap {bounds}" if register_cap else "no register cap",
                            __version__)
    # Helpers that read built-ins or synchronise only make sense inside a kernel; every
    # kernel's copy is specialised, so the originals would be dead (and misleading) code.
    dead = close_over_calls(program.functions, set(program.extern_shared)).needs_context
    thread_block = any(_uses(facts, k, "cg_block") for k, facts in zip(found, analyses))
    source = assemble(
        program, dead, header, barrier_form, thread_block, codes, partition, [kernel_text],
        [launcher(fused_name, partition.block_threads, sigs)],
    )
    templated = [a for s in sigs if s.template_header for a in s.template_args]
    expression = f"{fused_name}<{', '.join(templated)}>" if templated else fused_name
    return FusedKernel(source, fused_name, expression, partition, register_cap, tuple(sigs))
