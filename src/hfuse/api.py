"""The Python API of the fusion compiler: ``fuse(...)`` returns a ``FusedKernel``."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

from .internal_errors import internal_errors_named
from .version import __version__
from .codegen.emit import (arch_guard, assemble, assemble_device_file, dropped_comment, header_comment,
                           how_to_compile, renamed_symbols, template_note)
from .codegen.header_configuration import header_configuration
from .codegen.includes import IncludePlan, library_device_includes, plan_includes
from .codegen.launcher import FusedLaunch, launcher, pack_launch
from .codegen.macros import MacroSections
from .layouts import HORIZONTAL, INTERBLOCK, Layout, layout_of
from .codegen.preamble import BarrierForm
from .codegen.signature import PartSignature, part_signature
from .errors import HFuseError, Location, noted
from .files import write_output
from .fusion import Fusion
from .frontend.extract import load_source
from .frontend.instances import instance_reference
from .frontend.closure import DeviceClosure, brings_one_of, declares_one_of, device_closure, nominated_namespaces, template_argument_names
from .frontend.model import Function, SourceFile, TopLevelItem, namespace_wrap, qualify, scope_names
from .frontend.options import NO_OPTIONS, CompileOptions
from .frontend.parse import first_error, line_of, parse
from .frontend.preprocess import library_header_dirs
from .frontend.program import Program, is_device_variable, is_extern_shared
from .spec import Dim3, KernelSpec, with_libraries_apart
from .transform.analysis import ProgramFacts, check_kernel, close_over_calls, close_over_symbols, close_over_types
from .transform.context import BoundParameter, HelperConstant, PartContext
from .transform.early_exit import functions_of
from .transform.aliases import type_aliases
from .transform.class_members import constructed_types
from .transform.context_types import check_context_type, host_made_types, made_parameters, static_members_with_context
from .transform.measured_types import check_measuring_templates
from .transform.opaque import opaque_names
from .transform.header_reads import add_header_reads, add_unchecked_calls
from .frontend.clang import read_meaning
from .partition import MAX_BLOCK_THREADS, Part, Partition, make_partition, padded
from .header_meaning import arguments_alike, header_meaning, overload_choice, worth_reading
from .part_facts import (address_taken, check_device_state, check_disagreements, check_free_operators,
                         check_function_arguments, check_members_agree, check_own_blocks, check_parameter_calls,
                         check_foreign_functions, check_shared_types, check_static_shared, check_stored_functions,
                         check_using_directives, instance_constants, renamed_types, slice_alignment_of,
                         whole_block_need)
from .transform.specialize import specialise_part
from .registers import RegisterPolicy, kernel_attribute, part_budgets
from .registers import describe as describe_registers

FUSED_NAMESPACE = "hfuse_fused"
"""Where the fused kernel is emitted when some part lives in a namespace."""


@dataclass(frozen=True)
class FusedKernel:
    """A generated fused kernel: its source and how to launch it."""

    source: str
    name: str
    name_expression: str
    """What to look the kernel up by (NVRTC name expression; equals ``name`` unless templated)."""
    partition: Partition
    fusion: Fusion
    """What was fused how: the value it was emitted from."""
    signatures: tuple[PartSignature, ...] = field(repr=False)
    symbol_names: tuple[dict[str, str], ...] = ()
    """Per part: user's ``__constant__``/``__device__`` symbol name -> its name in the fused
    source, for the symbols hfuse renamed (two inputs defined them); empty: none renamed."""
    notes: tuple[str, ...] = ()
    """What the user should know about how it was fused (a layout hfuse chose, and why)."""
    written_variables: tuple[tuple[str, ...], ...] = ()
    """Per part: the fused source's names of the ``__device__`` variables it may write."""
    inputs: tuple[Path, ...] = ()
    """The files it was made from (sources, the user headers they include): ``write`` never writes one."""

    @property
    def template_parameters(self) -> tuple[str, ...]:
        """The fused kernel's own template parameters (``hf2_T``): those of the parts whose
        template arguments were not given. Empty: the kernel is one instance, ready to launch."""
        return tuple(a for s in self.signatures if s.template_header for a in s.template_args)

    @property
    def layout(self) -> Layout:
        return self.fusion.layout

    @property
    def register_cap(self) -> RegisterPolicy | None:
        return self.fusion.registers

    @property
    def parts(self) -> tuple[Part, ...]:
        return self.partition.parts

    @property
    def block(self) -> Dim3:
        return Dim3(self.partition.block_threads)

    def write(self, path: str | Path) -> Path:
        """Writes the fused file (whole or not at all); an unwritable path is an ``HFuseError``."""
        return write_output(path, self.source, "fused file", self.inputs)

    def pack(self, args_per_kernel: Sequence[Sequence[Any]], grids: Sequence[Dim3], smems: Sequence[int],
             sm_count: int | None = None) -> FusedLaunch:
        """The fused launch for the given per-kernel arguments, grids and dynamic shared memory
        (``sm_count``: the GPU's SMs, which size a persistent layout's grid)."""
        if not len(args_per_kernel) == len(grids) == len(smems) == len(self.parts):
            raise ValueError(f"expected {len(self.parts)} argument lists, grids and shared-memory sizes")
        for sig, args in zip(self.signatures, args_per_kernel):
            if len(args) != len(sig.names):
                raise HFuseError(
                    f"{len(args)} arguments given, the kernel takes {len(sig.names)} ({', '.join(sig.params)})",
                    Location(sig.part.kernel.file, sig.part.kernel.line, sig.part.spec.name),
                )
        return pack_launch(self.block.size, args_per_kernel, grids, smems, self.layout.blocks_add_up,
                           [s.smem_align for s in self.signatures], self.layout.grid_limit(len(self.parts), sm_count))


def _sources(specs: Sequence[KernelSpec], sources: Mapping[str | Path, str] | None, options: CompileOptions) -> list[SourceFile]:
    given = {Path(k): v for k, v in (sources or {}).items()}
    files: list[SourceFile] = []
    read_with: dict[Path, tuple[KernelSpec, CompileOptions]] = {}
    arguments = {s.file: tuple(dict.fromkeys(a for t in specs if t.file == s.file for a in t.template_args)) for s in specs}
    for spec in specs:
        own = spec.options or options
        if spec.file in read_with:
            first, first_options = read_with[spec.file]
            if own != first_options:  # one reading of a file per request: the second's macros would be the first's
                raise HFuseError(
                    f"{spec.file} is read for '{first.name}' with {' '.join(first_options.compiler_flags()) or 'no flags'} "
                    f"and for '{spec.name}' with {' '.join(own.compiler_flags()) or 'no flags'}: hfuse reads a file "
                    "once per fusion",
                    Location(spec.file, None, spec.name),
                    hint="give both kernels the same flags, or fuse a copy of the file for the second",
                )
            continue
        read_with[spec.file] = (spec, own)
        files.append(load_source(spec.file, given.get(spec.file), own, arguments[spec.file]))
    return files


def _as_compiled(specs: Sequence[KernelSpec], files: Sequence[SourceFile]) -> list[KernelSpec]:
    """The kernels with their template arguments as the compiler reads them: a macro of the
    kernel's file that ``-k 'dequantize<QK4_0>'`` names means its value there (the fused
    file and the tuner's device file keep none of the user's macros)."""
    instances = {f.path: f.instances for f in files}
    return [replace(s, template_args=tuple(instances[s.file].get(a, a) for a in s.template_args))
            if s.template_args else s for s in specs]


def _check_parses(function: Function, spec: KernelSpec) -> None:
    tree = parse(function.text.encode())
    bad = first_error(tree.root_node)
    if bad is not None:
        line = function.line + line_of(bad) - 1
        snippet = bad.text.decode(errors="replace").strip().splitlines()[0][:60] if bad.text and bad.text.strip() else ""
        near = f"near '{snippet}'" if snippet else f"at line {line} (something is missing there)"
        raise HFuseError(
            f"'{function.name}' does not parse {near}",
            Location(function.file, line, spec.name),
            hint="hfuse parses CUDA C++ with tree-sitter after expanding macros; check this line compiles with nvcc "
            "with the same -I/-D options, and that every macro it uses is defined",
        )


def _merge(files: list[SourceFile], specs: list[KernelSpec]) -> Program:
    try:
        return Program.merge(files)
    except HFuseError as err:  # name a kernel of the file the conflict is in
        owner = next((s for s in specs if s.file == err.where.file), None)
        if owner is not None and err.where.kernel is None:
            err.where.kernel = owner.name
        raise


def _uses(facts: ProgramFacts, kernel: Function, what: str) -> bool:
    return any(getattr(f, what) for name in facts.reachable(kernel.key) for f in facts.facts[name])


@dataclass(frozen=True)
class PreparedKernel:
    """One kernel of a fusion request, analysed once: what every candidate is built from."""

    spec: KernelSpec
    function: Function
    facts: ProgramFacts
    needs_barrier: bool
    """It synchronises, or holds a thread block that could: its part needs a barrier id."""
    uses_thread_block: bool
    context_types: tuple[TopLevelItem, ...] = ()
    """Definitions of the structs with block-reading members that this kernel uses."""
    symbols: tuple[TopLevelItem, ...] = ()
    """Its own definitions of the symbols another input defines too (renamed per part)."""
    whole_block: HFuseError | None = None
    """Why it must run as one whole block of its own (CUB's block collectives, ...): only
    layouts that keep a block whole take it. None: it may share a block."""
    constants: tuple[tuple[str, int], ...] = ()
    """The instance's integer constants: template parameters, and what Clang evaluated for
    the expressions hfuse could not (``transform/instance_constants.py``)."""
    helper_constants: tuple[HelperConstant, ...] = ()
    """What Clang evaluated of the tile sizes of the helpers it calls."""
    host_made: frozenset[str] = frozenset()
    """Context types of which it takes an object from the host, by value: converted to the
    part's copy where its body is called (``transform/context_types.py``)."""
    made: tuple[BoundParameter, ...] = ()
    """The kernel's template parameters bound to a block-reading type, whose objects its
    body makes as the type's (``context_types.made_parameters``)."""
    constructed: frozenset[str] = frozenset()
    """Of its context types, those whose objects are made with arguments (``class_members``)."""
    uses_grid_group: bool = False
    """It asks cooperative groups' grid for ranks and sizes: the fused file defines the part's grid group."""
    writes: tuple[str, ...] = ()
    """The ``__device__`` variables it may write (keys): verification compares them too."""


@dataclass(frozen=True)
class PreparedUnit:
    """The front end's work for one fusion request: sources preprocessed with the user's
    options, parsed, merged, resolved and analysed, and the device-side closure of the
    kernels. ``fuse(..., prepared=unit)`` generates any candidate (partition, register
    cap, layout, block shapes) from it without reading or parsing anything again."""

    program: Program
    kernels: tuple[PreparedKernel, ...]
    options: CompileOptions
    closure: DeviceClosure
    include_plan: IncludePlan
    context_helpers: frozenset[str]
    """Helpers every part gets its own copy of: the originals are dead code in the fused file."""
    context_types: frozenset[str] = frozenset()
    """Structs every part gets its own copy of (see transform/context_types.py)."""
    symbols: frozenset[str] = frozenset()
    """Symbols defined by several inputs: every part gets its own (see transform/symbols.py)."""
    notes: tuple[str, ...] = ()
    """What the front end could not do and how it did without (Clang could not read a file)."""
    requests: tuple[KernelSpec, ...] = ()
    """The kernels as the request named them (``kernels`` hold them as compiled, macros of
    their template arguments expanded)."""

    @cached_property
    def macros(self) -> MacroSections:
        """The user's macros and files, for every candidate's text (read once per request)."""
        return MacroSections.of(self.program.files)

    @property
    def needs_whole_blocks(self) -> bool:
        """Some kernel must run as one whole block of its own (``Layout.keeps_block_whole``)."""
        return any(k.whole_block is not None for k in self.kernels)

    def default_layout(self, blocks: Sequence[Dim3]) -> tuple[Layout, tuple[str, ...]]:
        """Horizontal fusion, or inter-block fusion where a kernel needs whole blocks or the
        ``blocks`` together are more than a block may have, and why."""
        needing = [k for k in self.kernels if k.whole_block is not None]
        threads = sum(padded(b.size) for b in blocks)
        if not needing and threads > MAX_BLOCK_THREADS and all(b.size <= MAX_BLOCK_THREADS for b in blocks):
            return INTERBLOCK, (*self.notes, f"note: the kernels' blocks together have {threads} threads, more than "
                                f"the {MAX_BLOCK_THREADS} of a block, so the kernels are fused by the interblock "
                                "layout, which runs one block of one kernel per fused block")
        if not needing:
            return HORIZONTAL, self.notes
        first = needing[0].whole_block
        return INTERBLOCK, (*self.notes, f"note: {first.where.kernel} must run as one whole block of its own "
                            f"({first.message}), so the kernels are fused by the interblock layout, which runs one "
                            "block of one kernel per fused block",)

    @property
    def headers(self) -> tuple[Path, ...]:
        return tuple(dict.fromkeys(h for f in self.program.files for h in f.headers))

    def matches(self, specs: Sequence[KernelSpec]) -> bool:
        """Whether ``specs`` name the same kernels and instantiations (their blocks may differ)."""
        def named(given: Sequence[KernelSpec]) -> list:
            return [(s.file, s.name, tuple(s.template_args)) for s in given]

        return named(specs) in (named(self.requests), named([k.spec for k in self.kernels]))

    def emit(self, fusion: Fusion, *, name: str | None = None, barrier_form: BarrierForm = "barrier") -> FusedKernel:
        """The fused kernel of these kernels for ``fusion`` (any layout, blocks, register
        policy): nothing is read or parsed again. Raises ``HFuseError`` for a fusion these
        kernels cannot take."""
        if len(fusion.blocks) != len(self.kernels):
            raise ValueError(f"the fusion has {len(fusion.blocks)} blocks for {len(self.kernels)} kernels")
        specs = [k.spec.with_block(block) for k, block in zip(self.kernels, fusion.blocks)]
        with internal_errors_named(specs):
            return _generate(specs, self, fusion, name, barrier_form)


def prepare(
    kernels: Sequence[KernelSpec],
    *,
    sources: Mapping[str | Path, str] | None = None,
    options: CompileOptions | None = None,
) -> PreparedUnit:
    """Run the front end once: preprocess, parse, resolve, analyse and check ``kernels``.

    Raises ``HFuseError`` (file, kernel, line) for input hfuse cannot fuse. The block
    shapes of ``kernels`` do not matter here.
    """
    specs, options = with_libraries_apart(list(kernels), options or NO_OPTIONS)
    with internal_errors_named(specs, options):
        return _prepare(specs, sources, options)


def _prepare(specs: list[KernelSpec], sources: Mapping[str | Path, str] | None, options: CompileOptions) -> PreparedUnit:
    files = _sources(specs, sources, options)
    requests, specs = tuple(specs), _as_compiled(specs, files)
    program = _merge(files, specs)
    by_path = {f.path: f for f in files}
    found = [program.kernel(s.name, s.file, s.template_args, overload_choice(s, by_path[s.file], sources, options),
                            s.line, arguments_alike(s, by_path[s.file], sources, options)) for s in specs]
    closure = device_closure(program, found, [s.template_args for s in specs])
    opaque = opaque_names(program.items, program.resolver)
    everything = close_over_calls(
        {**program.functions, **{k.key: [k] for k in found}}, set(program.extern_shared), program.resolver, opaque,
    )
    constants = instance_constants(specs, found, files, sources, options, everything)
    meaning, notes, unread = header_meaning(specs, found, files, sources, options, worth_reading(everything, found))
    with noted(notes):  # (a refusal below may have its cause in them: Clang could not read an instance)
        add_header_reads(everything, meaning)
        add_unchecked_calls(everything, unread, program.resolver)
        clashes = program.clashing_symbols()
        check_shared_types(closure.items, program, clashes, specs)
        close_over_symbols(everything, program.items, program.resolver, set(clashes))
        # functions two inputs define differently: each part gets its own file's, renamed
        everything.needs_context.update(key for key in program.function_clashes if key in everything.facts)
        everything.propagate()
        context_types = close_over_types(everything, program.items, program.resolver,
                                         {k.key: template_argument_names(s.template_args) for k, s in zip(found, specs)})
        check_free_operators(closure.items, everything.needs_context, specs, program)
        check_stored_functions(closure.items, everything.needs_context, specs, program)
        everything.address_taken = address_taken(program, everything)
        prepared = []
        for spec, kernel in zip(specs, found):
            for key in everything.reachable(kernel.key):
                for fn in everything.facts[key]:
                    _check_parses(fn.function, spec)
            check_parameter_calls(spec, kernel, everything, program)  # (before Clang's findings: its hint is the kernel's)
            check_kernel(kernel, everything)
            check_function_arguments(spec, kernel, program, everything.needs_context)
            whole_block = whole_block_need(spec, kernel, everything, opaque)
            own_closure = device_closure(program, [kernel], [spec.template_args]) if context_types or clashes else closure
            def own(key: str, file: Path = spec.file) -> list[TopLevelItem]:  # (of a name two inputs define differently)
                family = program.families.get(key, {})  # (a class template with its specialisations)
                return family.get(file) or next(iter(family.values()), None) or [
                    clashes[key].get(file) or next(iter(clashes[key].values()))]

            def with_families(items: Sequence[TopLevelItem]) -> list[TopLevelItem]:
                # an item of a class template's family brings its part's whole family, in order
                return [i for item in items for i in next((own(k) for k in item.keys if k in program.families), [item])]

            # a type two inputs define differently whose members read the block: its own file's, as a context type
            types = tuple({id(i): i for i in with_families([c for c in own_closure.items if set(c.keys) & context_types])
                           if all(i in own(key) for key in set(i.keys) & set(clashes))}.values())
            # (a name another input's directive may bring: renamed in its own input's part only)
            used = [key for key in clashes if key not in context_types and any(key in i.keys for i in own_closure.items)
                    and (key not in program.exposed or spec.file in clashes[key])]
            symbols = tuple({id(i): i for key in used for i in own(key)}.values())  # (an enum is one item of several names)
            for item in types:
                check_members_agree(item, program, spec.name)
                check_context_type(item, everything.needs_context, spec.name)
            bound = made_parameters(kernel, spec.template_args, types)
            check_measuring_templates(kernel, spec.name, [f.function for key in everything.reachable(kernel.key)
                                                          for f in everything.facts[key]], types, bound)
            host_made = host_made_types(kernel, spec.template_args, types, everything.needs_context, spec.name)
            needs_barrier = kernel.key in everything.has_barrier or _uses(everything, kernel, "cg_block")
            prepared.append(PreparedKernel(spec, kernel, everything, needs_barrier, _uses(everything, kernel, "cg_block"),
                                           types, symbols, whole_block, *constants[len(prepared)], host_made,
                                           uses_grid_group=_uses(everything, kernel, "cg_grid"),
                                           made=bound, constructed=constructed_types(types)))
        notes = (*notes, *(f"note: {k.name}'s __maxnreg__({k.max_registers}) caps the kernel alone and is not carried "
                           "into the fused kernel (--max-registers caps that)" for k in found if k.max_registers))
        state = check_device_state([(k.spec, k.function, k.facts) for k in prepared], program, frozenset(clashes))
        notes, prepared = (*notes, *state.notes), [replace(k, writes=w) for k, w in zip(prepared, state.written)]
        check_disagreements(specs, found, program)
        check_using_directives([(k.spec, k.function, k.facts) for k in prepared], program)
        check_foreign_functions([(k.spec, k.function, k.facts) for k in prepared], program)
        kept = list(dict.fromkeys(i.text for s in program.files for i in s.items if i.kind == "include"))
        context_helpers = frozenset(everything.needs_context - {k.key for k in found})
        # (the kernel's own item: an explicit specialisation's is not the one whose function was found)
        uses = frozenset().union(*(i.references for i in closure.items),
                                 *(program.kernel_item(k).references for k in found))
        values = tuple(dict.fromkeys(m for f in program.files for m in f.value_macros))
        libraries = list(dict.fromkeys(d for s in specs for d in library_header_dirs(s.options or options)))
        nvrtc_too = library_device_includes(kept, libraries, meaning.header_files)
        configuration = header_configuration(program.files)
        return PreparedUnit(program, tuple(prepared), options, closure,
                            configuration.around(plan_includes(kept, uses, values, nvrtc_too)), context_helpers,
                            context_types, frozenset(clashes), (*notes, *configuration.notes), requests)


@dataclass(frozen=True)
class DeviceSource:
    """One original kernel with only what it needs: the file NVRTC compiles for the unfused baseline."""

    source: str
    name_expression: str
    qualified_name: str
    """The kernel's name as file scope sees it (``mylib::scale``), template arguments aside."""


def device_source(
    kernel: KernelSpec,
    *,
    sources: Mapping[str | Path, str] | None = None,
    options: CompileOptions | None = None,
) -> DeviceSource:
    """The device side of ``kernel``'s file: the kernel unchanged, the definitions it uses,
    and the headers device code may include; host code and host headers left out.

    The tuner compiles the *unfused* kernels from this, so a sample file with ``main``,
    ``<iostream>`` and ``cudaMalloc`` needs no editing before it is tuned. Nothing is
    refused here: an unfused kernel runs as it is.
    """
    [kernel], options = with_libraries_apart([kernel], options or NO_OPTIONS)
    with internal_errors_named([kernel], options):
        files = _sources([kernel], sources, options)
        kernel = _as_compiled([kernel], files)[0]
        program = _merge(files, [kernel])
        function = program.kernel(kernel.name, kernel.file, kernel.template_args,
                                  overload_choice(kernel, files[0], sources, options), kernel.line,
                                  arguments_alike(kernel, files[0], sources, options))
        item = program.kernel_item(function)
        primary = program.primary_items(item)  # (compiled beside its explicit specialisation, as in the file)
        defined = [function, *(i.function for i in primary if i.function is not None)]
        closure = device_closure(program, defined, [kernel.template_args] * len(defined))
        uses = frozenset().union(item.references, *(i.references for i in [*closure.items, *primary]))
        kept = list(dict.fromkeys(i.text for s in program.files for i in s.items if i.kind == "include"))
        source = files[0]
        # (the instance: a header named only by the template arguments, ACT_FN's, is used too)
        reference = instance_reference(function, kernel.template_args, 0)
        used = read_meaning([source.path], kernel.options or options, user_files=source.headers,
                            kept_preamble=source.kept_preamble, sources={str(k): v for k, v in (sources or {}).items()},
                            instances=[reference] if reference else [])
        includes = header_configuration([source]).around(plan_includes(
            kept, uses, tuple(dict.fromkeys(m for f in program.files for m in f.value_macros)),
            library_device_includes(kept, library_header_dirs(kernel.options or options), used.header_files)))
        header = f"// Device side of {kernel.file.name} for {function.key}, generated by hfuse {__version__}.\n"
        header += dropped_comment(closure.dropped_host, includes.dropped, closure.dropped_unused)
        text = assemble_device_file(header, includes.lines, [*closure.items, *primary, item],
                                    nominated_namespaces(program, closure.items))
        # a template's instance as given, the compiler filling in defaults (``quantize_rows<>``: all of them)
        instance = f"{function.key}<{', '.join(kernel.template_args)}>" if function.is_template else function.key
        return DeviceSource(text, instance, function.key)


def fuse(
    kernels: Sequence[KernelSpec],
    *,
    layout: Layout | str | None = None,
    register_cap: RegisterPolicy | None = None,
    name: str | None = None,
    barrier_form: BarrierForm = "barrier",
    sources: Mapping[str | Path, str] | None = None,
    options: CompileOptions | None = None,
    prepared: PreparedUnit | None = None,
) -> FusedKernel:
    """Fuse ``kernels`` (two or more) into one kernel.

    ``layout`` (default: horizontal fusion, or inter-block fusion where a kernel must run as
    one whole block of its own, said in ``FusedKernel.notes``).

    ``sources`` maps a file path to its text for sources not on disk. ``options`` are
    nvcc's ``-I/-D/-U/-include/-std`` for preprocessing (and for compiling the result).
    ``prepared`` (from ``prepare``, for the same files and kernel names) skips the front
    end: the tuner prepares once and fuses every candidate from it. Raises ``HFuseError``
    (naming file, kernel and line) for input hfuse cannot fuse.
    """
    if len(specs := list(kernels)) < 2:
        raise HFuseError("fusion needs at least two kernels")
    chosen = layout_of(layout) if layout is not None else None  # an unknown layout says which exist
    if prepared is None:
        prepared = prepare(specs, sources=sources, options=options)
    elif not prepared.matches(specs):
        raise ValueError("the prepared unit was made for other kernels")
    notes = prepared.notes
    if chosen is None:
        chosen, notes = prepared.default_layout([s.block for s in specs])
    fused = prepared.emit(Fusion(tuple(s.block for s in specs), chosen, register_cap), name=name,
                          barrier_form=barrier_form)
    if renamed := renamed_symbols(fused.symbol_names, [s.name for s in specs]):
        notes = (*notes, f"note: {renamed}")
    if fused.template_parameters:
        notes = (*notes, f"note: {template_note(fused.name, fused.signatures)}")
    return replace(fused, notes=notes) if notes else fused


def _generate(
    specs: list[KernelSpec],
    prepared: PreparedUnit,
    fusion: Fusion,
    name: str | None,
    barrier_form: BarrierForm,
) -> FusedKernel:
    layout, register_cap = fusion.layout, fusion.registers
    if not layout.keeps_block_whole:
        for unit_kernel in prepared.kernels:
            if (need := unit_kernel.whole_block) is not None:
                raise HFuseError(f"cannot prove the fused kernel correct in {layout.name} fusion: {need.message}",
                                 need.where, hint=need.hint)
    program = prepared.program
    found = [k.function for k in prepared.kernels]
    partition = make_partition(specs, found, [k.needs_barrier for k in prepared.kernels], layout.placement,
                               [dict(k.constants) for k in prepared.kernels], whole_blocks=layout.keeps_block_whole)
    layout.validate(partition)
    if layout.keeps_block_whole:
        check_own_blocks([(k.spec, k.function, k.facts) for k in prepared.kernels], partition.block_threads)
    check_static_shared([(k.spec, k.function, k.facts, k.symbols) for k in prepared.kernels])
    fused_name = name or "_".join(dict.fromkeys(s.name.split("::")[-1] for s in specs)) + layout.suffix

    known = frozenset(program.functions) | {k.key for k in found}
    codes = []
    for part, unit_kernel in zip(partition.parts, prepared.kernels):
        facts = unit_kernel.facts
        ctx = PartContext(
            index=part.index,
            kernel=part.spec.name,
            barrier_id=part.barrier_id,
            threads=part.size,
            specialised=frozenset(facts.needs_context & set(facts.reachable(part.kernel.key))),
            extern_shared=program.extern_shared_of(part.spec.file),
            resolver=program.resolver,
            known=known,
            context_types=prepared.context_types,
            symbols=frozenset(k for i in unit_kernel.symbols for k in i.keys),
            functions=functions_of(facts),
            return_exits=layout.return_exits,
            whole_block=layout.keeps_block_whole,
            offset=part.offset,
            block_threads=part.threads,
            kernel_constants=unit_kernel.constants, helper_constants=unit_kernel.helper_constants,
            kernel_at=(str(part.kernel.file), part.kernel.line),
            host_made=unit_kernel.host_made,
            static_members=static_members_with_context(unit_kernel.context_types, facts.needs_context),
            constructed_types=unit_kernel.constructed, context_type_aliases=type_aliases(unit_kernel.context_types),
            made_parameters=unit_kernel.made,
        )
        own = {key: [i.function for i in by_source.get(part.spec.file, ()) if i.function is not None]
               for key, by_source in program.function_clashes.items()}
        functions = {**program.functions, **own, part.kernel.key: [part.kernel]}
        codes.append(specialise_part(part.kernel, ctx, facts, functions, unit_kernel.context_types, unit_kernel.symbols,
                                     program.template_prototypes()))
    sigs = [replace(part_signature(part, renamed_types(k.symbols, part.index),
                                   frozenset(key.split("::")[-1] for key in [*k.host_made, *(m.key for m in k.made)])),
                    smem_align=slice_alignment_of(program, k.function, k.facts))
            for part, k in zip(partition.parts, prepared.kernels)]

    bounds = kernel_attribute(register_cap, partition.block_threads)
    budgets = part_budgets(register_cap, [part.size for part in partition.parts], partition.block_threads,
                           warpgroups_of_their_own=layout.per_part_registers, layout=layout.name)
    kernel_text = layout.emit(fused_name, partition, sigs, [c.body_name for c in codes], bounds, budgets)
    launch_text = launcher(fused_name, partition.block_threads, sigs, layout.blocks_add_up,
                           layout.blocks_per_sm(len(sigs)))
    namespaces = [k.scope for k in found if any(k.scope)]
    expression_prefix = ""
    if namespaces:
        # Parameter types may be written as the kernel's namespace sees them (``Params``
        # for ``mylib::Params``, ``Acc`` of ``lib`` in ``lib::ops``): the fused kernel sees
        # every part's namespace and the namespaces around it
        usings = "\n".join(dict.fromkeys(f"using namespace ::{'::'.join(names[:n])};" for s in namespaces
                                          for names in [scope_names(s)] for n in range(1, len(names) + 1)))
        kernel_text = namespace_wrap((FUSED_NAMESPACE,), usings + "\n\n" + kernel_text)
        launch_text = launch_text.replace("#ifndef __CUDACC_RTC__\n", f"#ifndef __CUDACC_RTC__\nnamespace {FUSED_NAMESPACE} {{\n", 1)
        launch_text = launch_text.replace("\n#endif", f"\n}}  // namespace {FUSED_NAMESPACE}\n#endif")
        expression_prefix = f"{FUSED_NAMESPACE}::"
    regs = describe_registers(register_cap, partition.block_threads)
    header = header_comment(fused_name, partition, layout.spec, layout.grid_note, sigs, regs, __version__)
    header += how_to_compile(fused_name, sigs, prepared.options, FUSED_NAMESPACE if expression_prefix else None)
    header += dropped_comment(prepared.closure.dropped_host, prepared.include_plan.dropped, prepared.closure.dropped_unused)
    symbol_names = tuple(
        {key: qualify(item.scope, f"{key.split('::')[-1]}__hf{part.index}") for item in k.symbols for key in item.keys
         if is_device_variable(item)}
        for part, k in zip(partition.parts, prepared.kernels)
    )
    if renamed := renamed_symbols(symbol_names, [part.spec.name for part in partition.parts]):
        header += f"// {renamed[0].upper()}{renamed[1:]}\n"
    for arch in dict.fromkeys(f.arch for f in program.files if f.arch_macros):
        header += arch_guard(CompileOptions(arch=arch), [m for f in program.files if f.arch == arch
                                                         for m in f.arch_macros])
    shared_items = [
        item for item in prepared.closure.items
        if not declares_one_of(item, prepared.context_helpers)
        and not set(item.keys) & (prepared.context_types | prepared.symbols)
        and not brings_one_of(item, program, prepared.context_helpers)
        and not is_extern_shared(item)  # (every use names the part's own slice now)
    ]
    thread_block = any(k.uses_thread_block for k in prepared.kernels)
    source = assemble(
        shared_items, prepared.include_plan.lines, header, barrier_form, thread_block, codes, partition,
        [kernel_text], [launch_text], nominated_namespaces(program, shared_items),
        grid_group=any(k.uses_grid_group for k in prepared.kernels), macros=prepared.macros,
        sources=program.files,
    )
    templated = [a for s in sigs if s.template_header for a in s.template_args]
    expression = f"{expression_prefix}{fused_name}<{', '.join(templated)}>" if templated else f"{expression_prefix}{fused_name}"
    written = tuple(tuple(names.get(key, key) for key in k.writes) for names, k in zip(symbol_names, prepared.kernels))
    return FusedKernel(source, fused_name, expression, partition, fusion, tuple(sigs),
                       symbol_names if any(symbol_names) else (), written_variables=written,
                       inputs=tuple(dict.fromkeys(p for f in program.files for p in (f.path, *f.headers))))
