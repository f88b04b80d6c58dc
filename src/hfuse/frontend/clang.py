"""Meaning from a real C++ front end: which code of the headers hfuse keeps a function reaches.

hfuse edits the user's own text (tree-sitter ranges, ``parse.py``); headers it keeps as
``#include`` lines (the toolkit's, the system's, installed packages') it never rewrites.
Whether a kept header's code reads ``threadIdx``/``blockDim`` or synchronises the block is
a question of meaning: through namespace aliases, ``using``, typedefs, macros, ``auto``,
overloads and templates, only a compiler knows which declaration a name is. This module
asks Clang (libclang, CUDA device mode, the user's ``-I/-D/-U/-include/-std``, the
toolkit's headers) once per request and answers, for every function the user defines:
the declarations of kept headers it refers to (qualified, inline namespaces dropped) and,
for each such function or constructor, what it reads of the block, found by walking its
definition and the header functions it calls in turn.

Clang reads the same file about 80 times slower than tree-sitter (docs/front-end-clang.md);
the toolkit and system headers, the same for every file of a request, are compiled once
into a precompiled header kept in hfuse's cache directory, which brings a file of ordinary
size from about 0.45 s to about 0.06 s. Where Clang is not installed or cannot read the
file, ``Meaning.unavailable`` says why and hfuse keeps its own analysis.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..files import default_cache_dir
from ..toolkit import cuda_include_dirs, cuda_root
from .model import CLUSTER_READ, PTX_BLOCK, PTX_CLUSTER, PTX_REGISTERS, PTX_WARPGROUP, REGISTERS_SET, WARPGROUP_RUN
from .clang_meaning import FunctionMeaning, HeaderUse, Meaning, _key, required_dialect  # noqa: F401 (callers take them from here)
from .clang_pch import precompiled_preamble
from .instance_copies import COPY_NAMESPACE
from .options import CompileOptions

BUILTIN_VARIABLES = {"threadIdx": "reads threadIdx", "blockDim": "reads blockDim",
                     "blockIdx": "reads blockIdx", "gridDim": "reads gridDim"}
BARRIER_FUNCTIONS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
                               "__barrier_sync", "__nvvm_bar_sync", "__nvvm_bar0_popc", "__nvvm_bar0_and",
                               "__nvvm_bar0_or", "__nvvm_barrier_sync", "__nvvm_barrier_sync_cnt"})
_WALK_LIMIT = 4000
"""Header functions walked per request at most: past it the answer is 'not known', never 'safe'."""


def cindex():
    """libclang's Python module with its library loaded, or the reason it cannot be used."""
    try:
        import clang.cindex as ci

        ci.Index.create()
    except Exception as exc:  # not installed, or its shared library does not load here
        return None, f"libclang is not usable here ({type(exc).__name__}: {exc})"
    return ci, None


def _host_cxx_dirs() -> list[str]:
    """The host's libstdc++ and C headers: CUDA's host_defines.h refuses the libc++ that
    libclang's wheels bundle, and nvcc uses the host compiler's library anyway."""
    cxx = sorted(glob.glob("/usr/include/c++/*"), key=lambda p: [int(x) if x.isdigit() else 0 for x in
                                                                 Path(p).name.split(".")])
    if not cxx:
        return []
    machine = sorted(glob.glob("/usr/include/*-linux-gnu"))
    version = Path(cxx[-1]).name
    dirs = [cxx[-1]] + [f"{m}/c++/{version}" for m in machine[:1]] + [f"{cxx[-1]}/backward"] + machine[:1]
    return [d for d in dirs + ["/usr/include"] if Path(d).is_dir()]


def clang_arguments(options: CompileOptions) -> list[str] | str:
    """The arguments that make libclang read a file as nvcc's device pass does, or why it
    cannot. Installed libraries' folders (``-isystem``, PyTorch's) are searched after ``-I``."""
    ci, why = cindex()
    if ci is None:
        return why
    import clang

    cuda = cuda_root()
    if cuda is None:
        return "no CUDA toolkit found for Clang (nvcc on PATH, $CUDA_HOME or /usr/local/cuda)"
    host = _host_cxx_dirs()
    if not host:
        return "no host C++ library headers (libstdc++) found for Clang"
    resource = Path(clang.__file__).parent / "native" / "resource" / "include"
    # Clang's CUDA wrappers of <new>, <cmath>, ... (device placement new) come before the host's
    wrappers = [str(resource / "cuda_wrappers")] if (resource / "cuda_wrappers").is_dir() else []
    system = wrappers + ([str(resource)] if resource.is_dir() else []) + host
    toolkit = [d for d in cuda_include_dirs() if d != str((cuda / "include").resolve())]
    from .preprocess import CUDACC_VERSION, library_header_dirs

    libraries = [d for d in library_header_dirs(options) if d not in {p.resolve() for p in options.include_dirs}]

    arch = options.arch.rstrip("af") if options.arch.startswith("sm_") else "sm_" + options.arch.split("_", 1)[1]
    # libclang is not told the toolkit's version as the clang driver is: without it, a host
    # function's <<<...>>> is compiled for the launch API of CUDA < 9.2 (cudaConfigureCall)
    return ["-nostdinc", *(f"-isystem{d}" for d in system), "-x", "cuda", f"--cuda-gpu-arch={arch}",
            "--cuda-device-only", "-nocudalib", f"--cuda-path={cuda}", *(f"-isystem{d}" for d in toolkit),
            f"-std={options.emitted_std}", "-Wno-unknown-cuda-version",
            # C++14's 'register', which nvcc lets through under C++17 with a warning
            "-Wno-register",
            "-Xclang", "-target-sdk-version={}.{}".format(*CUDACC_VERSION),
            *options.compiler_flags(std=False, pre_includes=False, compiler="clang"),
            *(f"-isystem{d}" for d in libraries)]


@dataclass
class _Walker:
    """What header functions read of the block, remembered per declaration (USR)."""

    ci: object
    user_files: frozenset[str]
    known: dict[str, tuple[tuple[str, ...], bool]] = field(default_factory=dict)
    walked: int = 0
    _files: dict[str, bool] = field(default_factory=dict)
    classes: tuple = ()
    functions: tuple = ()
    device_attributes: tuple = ()

    def __post_init__(self) -> None:
        kinds = self.ci.CursorKind
        self.device_attributes = (kinds.CUDADEVICE_ATTR, kinds.CUDAGLOBAL_ATTR)
        self.classes = tuple(getattr(kinds, n) for n in ("CLASS_DECL", "STRUCT_DECL", "UNION_DECL", "CLASS_TEMPLATE",
                                                           "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"))
        self.functions = tuple(getattr(kinds, n) for n in ("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR",
                                                             "FUNCTION_TEMPLATE", "CONVERSION_FUNCTION"))

    def is_user(self, cursor) -> bool:
        location = cursor.location
        if location.is_in_system_header:
            return False  # (the kept headers are all -isystem: asked first, it spares their thousands a file look-up)
        file = location.file
        if file is None:
            return False
        name = file.name
        if name not in self._files:
            self._files[name] = _key(Path(name)) in self.user_files
        return self._files[name]

    def definitions(self, parent, defining) -> Iterable:
        """The user's function definitions below ``parent``, descending only into what the
        user's files declare (the headers' thousands of declarations are never visited)."""
        for cursor in parent.get_children():
            if not self.is_user(cursor):
                continue
            if cursor.kind in defining:
                if cursor.is_definition():
                    yield cursor
            else:
                yield from self.definitions(cursor, defining)

    def presumed(self, location) -> tuple[Path, int]:
        """The file and line ``#line`` directives make of ``location`` (libclang's own
        locations are where the text is)."""
        lib = self.ci.conf.lib
        function = lib.clang_getPresumedLocation
        function.argtypes = [self.ci.SourceLocation, ctypes.POINTER(self.ci._CXString),
                             ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
        function.restype = None
        name, line, column = self.ci._CXString(), ctypes.c_uint(), ctypes.c_uint()
        function(location, ctypes.byref(name), ctypes.byref(line), ctypes.byref(column))
        return Path(self.ci._CXString.from_result(name)), line.value

    def header_object_call(self, node) -> str | None:
        """``r.sum(v)`` in a template, ``r`` made by a kept header (``auto r =
        lib::make_reducer(sh)``): a member call no declaration answers before instantiation.
        The header's name that made the object, or None."""
        ck = self.ci.CursorKind
        if node.kind != ck.CALL_EXPR or (node.referenced is not None and node.referenced != node):
            return None
        member = next(iter(node.get_children()), None)
        if member is None or member.kind != ck.MEMBER_REF_EXPR or (
                member.referenced is not None and member.referenced != member):
            return None
        base = next(iter(member.get_children()), None)
        variable = base.referenced if base is not None and base.kind == ck.DECL_REF_EXPR else None
        if variable is None or variable.kind != ck.VAR_DECL:
            return None
        for inner in variable.walk_preorder():
            for target in self.targets(inner):
                if target.location.file is not None and not self.is_user(target) and target.kind in self.functions:
                    return _qualified(target, self.ci)
        return None

    def instance_of_template(self, function) -> bool:
        """``reduce<float>`` of ``template <class T> T reduce(T)``: Clang instantiated its body."""
        return not self.ci.conf.lib.clang_getSpecializedCursorTemplate(function).is_null()

    def targets(self, node) -> list:
        """What ``node`` refers to: its declaration, or, for a name a template's dependent call
        leaves unresolved (``lib::block_sum<T>(v)``, ``block_sum(v)`` after ``using
        lib::block_sum;``), every declaration it may pick: each may be the one that runs."""
        ck, lib = self.ci.CursorKind, self.ci.conf.lib
        if node.kind != ck.OVERLOADED_DECL_REF:
            target = node.referenced
            return [] if target is None or target == node else [target]
        found, pending, seen = [], [node], set()
        while pending:
            reference = pending.pop()
            for i in range(lib.clang_getNumOverloadedDecls(reference)):
                declaration = lib.clang_getOverloadedDecl(reference, i)
                declaration._tu = reference._tu
                if declaration.kind not in (ck.UNEXPOSED_DECL, ck.USING_DECLARATION):
                    found.append(declaration)
                    continue
                # a using-declaration's shadow: the names it brings are at its own location
                where = declaration.location
                if where.file is None or (where.file.name, where.offset) in seen:
                    continue
                seen.add((where.file.name, where.offset))
                brought = self.ci.Cursor.from_location(reference._tu, where)
                if brought is not None and brought.kind == ck.OVERLOADED_DECL_REF:
                    pending.append(brought)
        return found

    def through_type_parameter(self, node) -> bool:
        """``B::Tid()`` in a template: a call of a member of a template type parameter, which
        names no declaration until the template is instantiated (PyTorch's
        ``BlockReduceSum<T, B = Block1D>`` reads ``threadIdx`` and ``blockDim`` that way)."""
        ck = self.ci.CursorKind
        if node.kind != ck.CALL_EXPR or (node.referenced is not None and node.referenced != node):
            return False
        callee = next(iter(node.get_children()), None)
        if callee is None or callee.kind != ck.DECL_REF_EXPR:
            return False  # (an unresolved name's template arguments, f<T>(x), are no qualifier)
        qualifier = next(iter(callee.get_children()), None)  # the B of B::Tid
        return (qualifier is not None and qualifier.kind == ck.TYPE_REF and qualifier.referenced is not None
                and qualifier.referenced.kind == ck.TEMPLATE_TYPE_PARAMETER)

    def is_device(self, function) -> bool:
        """``__device__`` or ``__global__`` (what device code can run); constexpr functions,
        which Clang lets device code call, compute constants and read no built-in."""
        return any(c.kind in self.device_attributes for c in function.get_children())

    def reads(self, declaration) -> tuple[tuple[str, ...], bool]:
        """(what it reads, whether the walk was cut short) for a header function."""
        usr = declaration.get_usr() or f"{declaration.spelling}@{declaration.location}"
        if usr in self.known:
            return self.known[usr]
        self.known[usr] = ((), False)  # recursion: what is being walked reads nothing more
        found: set[str] = set()
        cut = False
        definition = declaration.get_definition() or declaration
        if not self.is_device(definition):
            return (), False  # host code: a device function cannot call it
        self.walked += 1
        if self.walked > _WALK_LIMIT:
            self.known[usr] = ((), True)
            return (), True
        ck = self.ci.CursorKind
        for node in definition.walk_preorder():
            if node.kind == ck.ASM_STMT or node.kind == ck.UNEXPOSED_STMT and node.kind.name == "ASM_STMT":
                text = " ".join(t.spelling for t in node.get_tokens())
                found.update(f"reads %{m.group(3)}" if m.group(3) else "synchronises the block"
                             for m in PTX_BLOCK.finditer(text))
                if PTX_CLUSTER.search(text):
                    found.add(CLUSTER_READ)
                if PTX_REGISTERS.search(text):
                    found.add(REGISTERS_SET)
                if PTX_WARPGROUP.search(text):
                    found.add(WARPGROUP_RUN)
                continue
            if self.through_type_parameter(node):
                cut = True  # what runs is the instance's argument's member: unknown in the template
                continue
            for target in self.targets(node):
                name = target.spelling
                if (node.kind == ck.DECL_REF_EXPR and name in BUILTIN_VARIABLES and target.kind == ck.VAR_DECL
                        and target.semantic_parent.kind == ck.TRANSLATION_UNIT):  # not a parameter called gridDim
                    found.add(BUILTIN_VARIABLES[name])
                elif name in BARRIER_FUNCTIONS:
                    found.add("synchronises the block")
                elif target.kind in self.functions and not self.is_user(target):
                    inner, inner_cut = self.reads(target)
                    found.update(inner)
                    cut = cut or inner_cut
        self.known[usr] = (tuple(sorted(found)), cut)
        return self.known[usr]


    def type_reads(self, declaration) -> tuple[tuple[str, ...], bool]:
        """What the member functions of a header class (or class template) read of the block:
        a kernel that names ``cub::BlockLoad<...>`` constructs one, and its constructor reads
        ``threadIdx``, though the calls through a dependent type are not resolved in a template."""
        ck = self.ci.CursorKind
        if declaration.kind in (ck.TYPEDEF_DECL, ck.TYPE_ALIAS_DECL):
            declaration = declaration.underlying_typedef_type.get_declaration()
        elif declaration.kind == ck.TYPE_ALIAS_TEMPLATE_DECL:
            inner = [c for c in declaration.get_children() if c.kind == ck.TYPE_ALIAS_DECL]
            declaration = inner[0].underlying_typedef_type.get_declaration() if inner else declaration
        if declaration.kind not in self.classes or declaration.location.file is None:
            return (), False
        usr = "type:" + (declaration.get_usr() or declaration.spelling)
        if usr in self.known:
            return self.known[usr]
        self.known[usr] = ((), False)
        definition = declaration.get_definition() or declaration
        found: set[str] = set()
        cut = False
        for member in definition.get_children():
            if member.kind in self.functions:
                inner, inner_cut = self.reads(member)
                found.update(inner)
                cut = cut or inner_cut
        self.known[usr] = (tuple(sorted(found)), cut)
        return self.known[usr]




def _qualified(cursor, ci) -> str:
    parts = []
    is_inline = ci.conf.lib.clang_Cursor_isInlineNamespace
    while cursor is not None and cursor.kind != ci.CursorKind.TRANSLATION_UNIT:
        if cursor.spelling and not (cursor.kind == ci.CursorKind.NAMESPACE and is_inline(cursor)):
            parts.append(cursor.spelling)
        cursor = cursor.semantic_parent
    return "::".join(reversed(parts))


CHECKED_HEADERS = frozenset({
    "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h", "builtin_types.h",
    "vector_types.h", "vector_functions.h", "driver_types.h", "math_constants.h", "cuda_stdint.h", "cuComplex.h",
    "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h", "curand_kernel.h", "mma.h",
    "cooperative_groups.h",
})
"""Toolkit headers whose device code reads nothing of the block beyond the built-ins hfuse
rewrites itself (``__syncthreads``, ...): ``tests/frontend/test_clang.py`` walks every function
they define with Clang to keep this true. Cooperative groups belong here because hfuse's
own rewrite converts them where they are written and refuses the spellings it cannot."""


def unchecked_headers(kept_includes: Sequence[str]) -> tuple[str, ...]:
    """The kept ``#include`` lines whose code nobody has checked: the host's C and C++
    library (host code, no device code reads the block) and ``CHECKED_HEADERS`` are not."""
    host = _host_cxx_dirs()
    out = []
    for line in kept_includes:
        name = line.split("<", 1)[1].split(">", 1)[0].strip() if "<" in line else line
        if name in CHECKED_HEADERS or name.startswith(("cooperative_groups/", "crt/")):
            continue
        if "<" in line and any((Path(d) / name).is_file() for d in host):
            continue
        out.append(line)
    return tuple(out)


def read_meaning(files: Sequence[Path], options: CompileOptions, *, user_files: Iterable[Path] = (),
                 kept_includes: Sequence[str] = (), sources: Mapping[str, str] | None = None,
                 cache: Path | None = None, instances: Sequence[str] = ()) -> Meaning:
    """Clang's answers for the functions defined in ``files`` and the user's headers
    (``user_files``: what hfuse reads as the user's own text, not keeps). Where every kept
    header is checked (``unchecked_headers``) there is nothing to ask and Clang is not run.
    ``instances``: kernel template instances written as ordinary code
    (``instance_copies.instance_copy``), read after the file: what such a kernel reaches is
    what they reach, where Clang compiles them. The same request (same texts, options,
    headers and instances) is answered once per process."""
    if not unchecked_headers(kept_includes):
        return Meaning()
    ci, why = cindex()
    if ci is None:  # asked each time, so that no answer cached below outlives libclang
        return Meaning(unavailable=why)
    given = dict(sources or {})
    users = tuple(Path(f) for f in user_files)
    texts = []
    for path in [*files, *users, *options.pre_includes]:
        text = given.get(str(path))
        try:
            texts.append(text if text is not None else Path(path).read_text(errors="replace"))
        except OSError:
            texts.append("")
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()
    return _read_once(tuple(Path(f) for f in files), options, users, tuple(kept_includes),
                      tuple((str(k), v) for k, v in given.items() if k in {str(f) for f in files}),
                      str(cache or default_cache_dir()), digest, tuple(instances))


@functools.lru_cache(maxsize=128)
def _read_once(files: tuple[Path, ...], options: CompileOptions, user_files: tuple[Path, ...],
               kept_includes: tuple[str, ...], sources: tuple[tuple[str, str], ...], cache: str,
               digest: str, instances: tuple[str, ...]) -> Meaning:
    """``read_meaning``'s work; ``digest`` (of every text read) keys the cache."""
    return _read(files, options, user_files, kept_includes, dict(sources), Path(cache), instances)


def _read(files: Sequence[Path], options: CompileOptions, user_files: Iterable[Path], kept_includes: Sequence[str],
          sources: Mapping[str, str], cache: Path, instances: Sequence[str] = ()) -> Meaning:
    ci, why = cindex()
    if ci is None:
        return Meaning(unavailable=why)
    arguments = clang_arguments(options)
    if isinstance(arguments, str):
        return Meaning(unavailable=arguments)
    is_inline = ci.conf.lib.clang_Cursor_isInlineNamespace
    is_inline.argtypes, is_inline.restype = [ci.Cursor], ctypes.c_uint
    mine = frozenset(_key(Path(f)) for f in [*files, *user_files])
    preamble = precompiled_preamble(ci, arguments, kept_includes, cache)
    if (dialect := required_dialect(preamble.error, options.std)) is not None:
        # decided by the flags, not by the file: parsing it as well would only take as long again
        return Meaning(unavailable=f"Clang could not read the headers {files[0]} keeps ({preamble.error})",
                       dialect=dialect, dialect_where=preamble.error)
    arguments = arguments + preamble.flags + options.pre_include_flags()
    walker = _Walker(ci, mine)
    functions: list[FunctionMeaning] = []
    copies: list[FunctionMeaning] = []
    ck = ci.CursorKind
    defining = (ck.FUNCTION_DECL, ck.FUNCTION_TEMPLATE, ck.CXX_METHOD, ck.CONSTRUCTOR, ck.DESTRUCTOR)
    seen: set[tuple[str, int]] = set()
    unread = None
    for path in files:
        try:
            unit, unread = _parse(ci, path, arguments, sources, instances)
        except ci.TranslationUnitLoadError as exc:
            return Meaning(unavailable=f"Clang could not read {path}: {exc}")
        errors = [d for d in unit.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            first = next((d for d in errors if required_dialect(d.spelling, options.std)), errors[0])
            where = f"{first.location.file}:{first.location.line}" if first.location.file else str(path)
            return Meaning(unavailable=f"Clang could not read {path} ({where}: {first.spelling})",
                           dialect=required_dialect(first.spelling, options.std),
                           dialect_where=f"{where}: {first.spelling}")
        for cursor in walker.definitions(unit.cursor, defining):
            copy = _in_copy(cursor, ck)
            # a copy's lines are the kernel's own, as its #line says
            file, start = walker.presumed(cursor.extent.start) if copy else \
                (Path(cursor.location.file.name), cursor.extent.start.line)
            if (not copy and (_key(file), start) in seen) or not walker.is_device(cursor):
                continue  # host functions are not fused (their launches are the user's)
            seen.add((_key(file), start))
            end = walker.presumed(cursor.extent.end)[1] if copy else cursor.extent.end.line
            # a kernel template read as written: where its instance's copy is missing (a parameter
            # pack, a copy that did not compile), what a dependent member call runs is unknown
            kernel_template = cursor.kind == ck.FUNCTION_TEMPLATE and any(
                c.kind == ck.CUDAGLOBAL_ATTR for c in cursor.get_children())
            found = FunctionMeaning(file, cursor.spelling, start, end,
                                    _header_uses(walker, cursor, start, copy, members=kernel_template))
            (copies if copy else functions).append(found)
    return Meaning(tuple(_instances_read(f, copies) for f in functions), instances_unread=unread)


def _parse(ci, path: Path, arguments: list[str], sources: Mapping[str, str],
           instances: Sequence[str]) -> tuple[object, str | None]:
    """The file parsed with its kernel template instances after it, or without them where
    they do not compile (the templates alone are then read), and why they did not."""
    unsaved = [(str(p), text) for p, text in sources.items()]
    text = sources.get(str(path))
    text = Path(path).read_text(errors="replace") if text is None and instances else text

    def parsed(copies: Sequence[str]):
        given = [(p, t) for p, t in unsaved if p != str(path)] + [(str(path), text + "\n" + "".join(copies))]
        unit = ci.Index.create().parse(str(path), args=arguments, unsaved_files=given)
        return unit, [d for d in unit.diagnostics if d.severity >= ci.Diagnostic.Error]

    unread = None
    if instances:
        unit, errors = parsed(instances)
        if not errors or any(d.location.file is not None and d.location.is_in_system_header for d in errors):
            return unit, None  # (a kept header that does not compile: the file does not, copies or not)
        unread = errors[0].spelling
        # one instance that does not compile leaves the others their copies
        kept = [copy for copy in instances if not parsed([copy])[1]] if len(instances) > 1 else []
        if kept and not (found := parsed(kept))[1]:
            return found[0], unread
    return ci.Index.create().parse(str(path), args=arguments, unsaved_files=unsaved or None), unread


def _in_copy(cursor, ck) -> bool:
    parent = cursor.semantic_parent
    while parent is not None and parent.kind != ck.TRANSLATION_UNIT:
        if parent.kind == ck.NAMESPACE and parent.spelling.startswith(COPY_NAMESPACE):
            return True
        parent = parent.semantic_parent
    return False


def _instances_read(template: FunctionMeaning, copies: Sequence[FunctionMeaning]) -> FunctionMeaning:
    """What a kernel template reaches, as its instances' copies found it (where any was
    read): each dependent call resolved to what runs, not to a template that names nothing."""
    mine = [c for c in copies if _key(c.file) == _key(template.file) and c.name == template.name
            and template.first_line <= c.first_line <= template.last_line]
    if not mine:
        return template
    uses = {(u.qualified, u.line): u for c in mine for u in c.uses}
    return FunctionMeaning(template.file, template.name, template.first_line, template.last_line,
                           tuple(uses.values()))


def _header_uses(walker: _Walker, cursor, start: int, copy: bool = False, uses: dict | None = None,
                 at: int | None = None, seen: set | None = None, members: bool = False) -> tuple[HeaderUse, ...]:
    """What function ``cursor`` (the user's) reaches in the kept headers, and what that reads
    (``copy``: an instance's copy, whose lines are those its ``#line`` gives). The instances
    of the user's own templates it calls are walked too, as Clang instantiated them, their
    findings put at the call's line (``at``): read as templates, their dependent calls
    (``r.sum(v)`` of an ``auto r = lib::make_reducer(sh)``) name nothing. ``members``: such a
    call in ``cursor`` itself on an object a kept header made is recorded as unknown."""
    ci = walker.ci
    ck = ci.CursorKind
    uses = {} if uses is None else uses
    seen = set() if seen is None else seen
    for node in cursor.walk_preorder():
        if members and (made := walker.header_object_call(node)) is not None:
            line = node.location.line
            uses.setdefault((made, line), HeaderUse(made, line, (), True))
        for target in walker.targets(node):
            if target.location.file is None:
                continue
            if walker.is_user(target):
                if target.kind in walker.functions and walker.instance_of_template(target):
                    definition = target.get_definition()
                    usr = target.get_usr() or target.displayname
                    if definition is not None and usr not in seen:
                        seen.add(usr)
                        here = at if at is not None else \
                            walker.presumed(node.location)[1] if copy else node.location.line
                        _header_uses(walker, definition, start, copy, uses, here, seen)
                continue
            if target.kind in (ck.PARM_DECL, ck.TEMPLATE_TYPE_PARAMETER, ck.TEMPLATE_NON_TYPE_PARAMETER):
                continue
            qualified = _qualified(target, ci)
            reads, cut = (), False
            if target.kind in walker.functions:
                if target.spelling in BARRIER_FUNCTIONS:
                    continue  # the user's own barriers are rewritten
                reads, cut = walker.reads(target)
            elif target.kind in walker.classes or target.kind in (ck.TYPEDEF_DECL, ck.TYPE_ALIAS_DECL,
                                                                ck.TYPE_ALIAS_TEMPLATE_DECL):
                reads, cut = walker.type_reads(target)
            elif node.kind == ck.DECL_REF_EXPR and target.spelling in BUILTIN_VARIABLES:
                continue  # the user's own reads of threadIdx are rewritten
            if at is not None:
                line = at
            elif not (node.location.file and walker.is_user(node)):
                line = start
            else:
                line = walker.presumed(node.location)[1] if copy else node.location.line
            key = (qualified, line)
            if key not in uses or (reads and not uses[key].reads):
                # (a name a template leaves unresolved may pick any of its candidates: not a use of each's header)
                declared = "" if node.kind == ck.OVERLOADED_DECL_REF else _key(Path(target.location.file.name))
                uses[key] = HeaderUse(qualified, line, reads, cut, declared)
    return tuple(uses.values())
