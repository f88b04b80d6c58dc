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
import re
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..files import default_cache_dir
from ..toolkit import cuda_include_dirs, cuda_root
from .clang_meaning import FunctionMeaning, HeaderUse, Meaning, _key, required_dialect  # noqa: F401 (callers take them from here)
from .clang_leniency import with_template_keywords
from .clang_pch import errors_of, precompiled_preamble
from .clang_walk import Walker, header_uses, record_use
from .instances import INSTANCE_NAMESPACE
from .options import CompileOptions


def cindex():
    """libclang's Python module with its library loaded, or the reason it cannot be used."""
    try:
        import clang.cindex as ci

        ci.Index.create()
    except Exception as exc:  # not installed, or its shared library does not load here
        return None, f"libclang is not usable here ({type(exc).__name__}: {exc})"
    return ci, None


def host_cxx_dirs() -> list[str]:
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
    host = host_cxx_dirs()
    if not host:
        return "no host C++ library headers (libstdc++) found for Clang"
    resource = Path(clang.__file__).parent / "native" / "resource" / "include"
    # Clang's CUDA wrappers of <new>, <cmath>, ... (device placement new) come before the host's
    wrappers = [str(resource / "cuda_wrappers")] if (resource / "cuda_wrappers").is_dir() else []
    system = wrappers + ([str(resource)] if resource.is_dir() else []) + host
    toolkit = [d for d in cuda_include_dirs(import_cupy=False) if d != str((cuda / "include").resolve())]
    from .preprocess import CUDACC_VERSION, library_header_dirs

    libraries = [d for d in library_header_dirs(options) if d not in {p.resolve() for p in options.include_dirs}]

    arch = options.arch.rstrip("af") if options.arch.startswith("sm_") else "sm_" + options.arch.split("_", 1)[1]
    # libclang is not told the toolkit's version as the clang driver is: without it, a host
    # function's <<<...>>> is compiled for the launch API of CUDA < 9.2 (cudaConfigureCall)
    return ["-nostdinc", *(f"-isystem{d}" for d in system), "-x", "cuda", f"--cuda-gpu-arch={arch}",
            "--cuda-device-only", "-nocudalib", f"--cuda-path={cuda}", *(f"-isystem{d}" for d in toolkit),
            f"-std={options.emitted_std}", "-Wno-unknown-cuda-version",
            # no stop after 20 errors: errors in a kept header's host code that nvcc takes (cuDNN
            # frontend's JSON conversions) leave only their functions unknown, while a parse that
            # stops there leaves the user's file unread
            "-ferror-limit=0",
            # C++14's 'register', which nvcc lets through under C++17 with a warning
            "-Wno-register",
            # <cooperative_groups.h> declares cluster_group only under nvcc or NVRTC, or where
            # the compiler has the cluster intrinsics, as Clang has: without it a kernel of a
            # Hopper cluster is "unreadable"
            "-D_CG_CLUSTER_INTRINSICS_AVAILABLE",
            # Clang is given the generic architecture (sm_90 for sm_90a): the specific one's macros as nvcc
            # defines them, so that '#if __CUDA_ARCH_HAS_FEATURE__(SM90_ALL)' reads as hfuse's output has it
            *(f"-D{name}={value}" for name, value in options.arch_macros
              if name not in ("__CUDA_ARCH__", "__CUDA_ARCH_LIST__")),
            "-Xclang", "-target-sdk-version={}.{}".format(*CUDACC_VERSION),
            *options.compiler_flags(std=False, pre_includes=False, compiler="clang"),
            *(f"-isystem{d}" for d in libraries)]


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


def unchecked_headers(kept_preamble: Sequence[str]) -> tuple[str, ...]:
    """The kept ``#include`` lines whose code nobody has checked: the host's C and C++
    library (host code, no device code reads the block) and ``CHECKED_HEADERS`` are not."""
    host = host_cxx_dirs()
    out = []
    for line in kept_preamble:
        if not re.match(r"\s*#\s*include\b", line):
            continue  # (a user's macro that configures them: ``SourceFile.kept_preamble``)
        name = line.split("<", 1)[1].split(">", 1)[0].strip() if "<" in line else line
        if name in CHECKED_HEADERS or name.startswith(("cooperative_groups/", "crt/")):
            continue
        if "<" in line and any((Path(d) / name).is_file() for d in host):
            continue
        out.append(line)
    return tuple(out)


def read_meaning(files: Sequence[Path], options: CompileOptions, *, user_files: Iterable[Path] = (),
                 kept_preamble: Sequence[str] = (), sources: Mapping[str, str] | None = None,
                 cache: Path | None = None, instances: Sequence[str] = (),
                 only: frozenset[tuple[str, int]] | None = None) -> Meaning:
    """Clang's answers for the functions defined in ``files`` and the user's headers
    (``user_files``: what hfuse reads as the user's own text, not keeps). Where every kept
    header is checked (``unchecked_headers``) there is nothing to ask and Clang is not run.
    ``instances``: references to kernel template instances (``instances.instance_reference``),
    read after the file: what such a kernel reaches is what its instances reach, as Clang
    instantiated them. ``only``: the functions to answer for, each by its file (real path)
    and a line of its text (None: every device function of the files): of a file of a dozen
    kernels, a request that fuses one need not have the others walked. The same request
    (same texts, options, headers, instances and functions) is answered once per process."""
    if not unchecked_headers(kept_preamble):
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
    return _read_once(tuple(Path(f) for f in files), options, users, tuple(kept_preamble),
                      tuple((str(k), v) for k, v in given.items() if k in {str(f) for f in files}),
                      str(cache or default_cache_dir()), digest, tuple(instances), only)


@functools.lru_cache(maxsize=128)
def _read_once(files: tuple[Path, ...], options: CompileOptions, user_files: tuple[Path, ...],
               kept_preamble: tuple[str, ...], sources: tuple[tuple[str, str], ...], cache: str,
               digest: str, instances: tuple[str, ...], only: frozenset[tuple[str, int]] | None) -> Meaning:
    """``read_meaning``'s work; ``digest`` (of every text read) keys the cache."""
    return _read(files, options, user_files, kept_preamble, dict(sources), Path(cache), instances, only)


def _read(files: Sequence[Path], options: CompileOptions, user_files: Iterable[Path], kept_preamble: Sequence[str],
          sources: Mapping[str, str], cache: Path, instances: Sequence[str] = (),
          only: frozenset[tuple[str, int]] | None = None) -> Meaning:
    ci, why = cindex()
    if ci is None:
        return Meaning(unavailable=why)
    unit = _unit(ci, options, kept_preamble, cache)
    if isinstance(unit, Meaning):
        return unit if unit.dialect is None else Meaning(
            unavailable=f"Clang could not read the headers {files[0]} keeps ({unit.dialect_where})",
            dialect=unit.dialect, dialect_where=unit.dialect_where)
    arguments, broken = unit
    is_inline = ci.conf.lib.clang_Cursor_isInlineNamespace
    is_inline.argtypes, is_inline.restype = [ci.Cursor], ctypes.c_uint
    mine = frozenset(_key(Path(f)) for f in [*files, *user_files])
    walker = Walker(ci, mine)
    for file, line in broken:  # (errors in the precompiled headers' code)
        if _key(Path(file)) in mine:
            return Meaning(unavailable=f"Clang could not read {file} (line {line})")
        walker.broken[_key(Path(file))] = (*walker.broken.get(_key(Path(file)), ()), line)
    functions: list[FunctionMeaning] = []
    instantiated: list[FunctionMeaning] = []
    ck = ci.CursorKind
    defining = (ck.FUNCTION_DECL, ck.FUNCTION_TEMPLATE, ck.CXX_METHOD, ck.CONSTRUCTOR, ck.DESTRUCTOR)
    seen: set[tuple[str, int]] = set()
    unread = None
    for path in files:
        try:
            unit, unread = _parse(ci, path, arguments, sources, instances, lambda name: _key(Path(name)) in mine)
        except ci.TranslationUnitLoadError as exc:
            return Meaning(unavailable=f"Clang could not read {path}: {exc}")
        errors = errors_of(ci, unit)
        # an error in a header's code (which nvcc, more lenient, compiles: a dependent member
        # template called without 'template') leaves the functions that hold it unknown, and
        # only those; one in the user's files (in what the request reaches), or one asking for a
        # later C++, the whole file
        in_headers = [d for d in errors if d.location.file is not None
                      and _key(Path(d.location.file.name)) not in mine and not required_dialect(d.spelling, options.std)]
        for d in in_headers:
            key = _key(Path(d.location.file.name))
            walker.broken[key] = (*walker.broken.get(key, ()), d.location.line)
        errors = [d for d in errors if d not in in_headers]
        if only is not None and errors:  # (one inside a function of the user's the request does not reach: no matter)
            unreached = [(_key(Path(c.location.file.name)), c.extent.start.line, c.extent.end.line)
                         for c in walker.definitions(unit.cursor, defining)]
            unreached = [(k, a, b) for k, a, b in unreached if not any((k, line) in only for line in range(a, b + 1))]
            errors = [d for d in errors if required_dialect(d.spelling, options.std) or d.location.file is None
                      or not any(k == _key(Path(d.location.file.name)) and a <= d.location.line <= b
                                 for k, a, b in unreached)]
        if errors:
            first = next((d for d in errors if required_dialect(d.spelling, options.std)), errors[0])
            where = f"{first.location.file}:{first.location.line}" if first.location.file else str(path)
            return Meaning(unavailable=f"Clang could not read {path} ({where}: {first.spelling})",
                           dialect=required_dialect(first.spelling, options.std),
                           dialect_where=f"{where}: {first.spelling}")
        found_here = []
        for cursor in walker.definitions(unit.cursor, defining):
            file, start = Path(cursor.location.file.name), cursor.extent.start.line
            if (_key(file), start) in seen or not walker.is_device(cursor):
                continue  # host functions are not fused (their launches are the user's)
            if only is not None and not any((_key(file), line) in only
                                            for line in range(start, cursor.extent.end.line + 1)):
                continue  # (what the request does not reach)
            seen.add((_key(file), start))
            found_here.append((cursor, file, start, cursor.extent.end.line))
        helpers: dict = {}  # the instances of the user's helper templates the walks reach
        for instance in _instances(walker, unit.cursor, ck):
            found_uses: dict = {}
            first, last = instance.extent.start.line, instance.extent.end.line
            header_uses(walker, instance, first, found_uses, instantiations=helpers)
            instantiated.append(FunctionMeaning(Path(instance.location.file.name), instance.spelling, first, last,
                                          tuple(found_uses.values())))
        # (plain functions first: the helper template instances they reach are read before the templates)
        for cursor, file, start, end in sorted(found_here, key=lambda found: found[0].kind == ck.FUNCTION_TEMPLATE):
            # a kernel template read as written: where its instance is missing (no template arguments
            # given, an instance Clang could not instantiate), what a dependent call runs is unknown
            kernel_template = cursor.kind == ck.FUNCTION_TEMPLATE and any(
                c.kind == ck.CUDAGLOBAL_ATTR for c in cursor.get_children())
            found_uses = {}
            if not (kernel_template and _spans(instantiated, file, cursor.spelling, start, end)
                    or cursor.kind == ck.FUNCTION_TEMPLATE and _spans(_helpers_read(helpers), file, cursor.spelling,
                                                                      start, end)):
                header_uses(walker, cursor, start, found_uses, members=kernel_template,  # (else its instances')
                            instantiations=helpers)
            functions.append(FunctionMeaning(file, cursor.spelling, start, end, tuple(found_uses.values())))
        instantiated.extend(_helpers_read(helpers))
    return Meaning(tuple(_instances_read(f, instantiated) for f in functions), instances_unread=unread)


def _helpers_read(helpers: Mapping[str, tuple]) -> list[FunctionMeaning]:
    """The instances of the user's helper templates a walk reached (``header_uses``), each
    with what it reaches: a helper template (ATen's ``reduce<scalar_t, Op, PTA>``, calling
    ``cuda_utils::BlockReduce<scalar_t, ...>``) reaches what its instances do, not what its
    dependent calls name as written (nothing, until instantiated)."""
    return [FunctionMeaning(Path(d.location.file.name), d.spelling, d.extent.start.line, d.extent.end.line,
                            tuple(own.values())) for d, own in helpers.values() if d.location.file is not None]


def _spans(read: Sequence[FunctionMeaning], file: Path, name: str, start: int, end: int) -> bool:
    """Whether an instance in ``read`` is of the template ``name`` at lines ``start``-``end`` of ``file``."""
    return any(_key(c.file) == _key(file) and c.name == name and start <= c.first_line <= end for c in read)


def unit_arguments(ci, options: CompileOptions, kept_preamble: Sequence[str], cache: Path) -> list[str] | Meaning:
    """Clang's arguments for a file of the request, its kept headers precompiled, or why
    there are none (a ``Meaning`` saying so; ``dialect`` set where the flags' standard is too old)."""
    unit = _unit(ci, options, kept_preamble, cache)
    return unit if isinstance(unit, Meaning) else unit[0]


def _unit(ci, options: CompileOptions, kept_preamble: Sequence[str],
          cache: Path) -> tuple[list[str], tuple[tuple[str, int], ...]] | Meaning:
    """``unit_arguments``, and (file, line) of the errors the precompiled headers' code holds."""
    arguments = clang_arguments(options)
    if isinstance(arguments, str):
        return Meaning(unavailable=arguments)
    preamble = precompiled_preamble(ci, arguments, kept_preamble, cache)
    if (dialect := required_dialect(preamble.error, options.std)) is not None:
        # decided by the flags, not by the file: parsing it as well would only take as long again
        return Meaning(unavailable=preamble.error, dialect=dialect, dialect_where=preamble.error)
    return arguments + preamble.flags + options.pre_include_flags(), preamble.broken


@functools.lru_cache(maxsize=32)
def instantiated_lines(path: Path, options: CompileOptions, reference: str, *, kept_preamble: tuple[str, ...] = (),
                       sources: tuple[tuple[str, str], ...] = (), cache: Path | None = None) -> tuple[int, int] | str:
    """The first and last line of the function template Clang instantiates for ``reference``
    (``instances.instance_reference``) after the file ``path``: of kernel templates that
    share a name, the one overload resolution picks, SFINAE included
    (``std::enable_if_t<(W > 0)>`` beside ``std::enable_if_t<W == 0>``). Where there is none
    (Clang is not usable, no overload takes those arguments, several do), why not."""
    ci, why = cindex()
    if ci is None:
        return why
    arguments = unit_arguments(ci, options, kept_preamble, Path(cache or default_cache_dir()))
    if isinstance(arguments, Meaning):
        return f"Clang could not read the headers the file keeps ({arguments.unavailable})"
    try:
        unit, unread = _parse(ci, path, arguments, dict(sources), [reference],
                              lambda name: _key(Path(name)) == _key(Path(path)))
    except ci.TranslationUnitLoadError as exc:
        return f"Clang could not read {path}: {exc}"
    if unread is not None:
        return f"Clang: {unread}"
    walker = Walker(ci, frozenset({_key(Path(path))}))
    found = next(_instances(walker, unit.cursor, ci.CursorKind), None)
    return "Clang instantiated no kernel for them" if found is None else (found.extent.start.line,
                                                                          found.extent.end.line)


def _parse(ci, path: Path, arguments: list[str], sources: Mapping[str, str], instances: Sequence[str],
           editable: Callable[[str], bool]) -> tuple[object, str | None]:
    """The file parsed with its kernel template instances after it, or without them where
    they do not compile (the templates alone are then read), and why they did not. Every
    text is read as nvcc reads it (``clang_leniency``); where a kept header's must be
    amended (not ``editable``: not the user's), the parse does without the precompiled
    headers, which hold the header as it was."""
    texts = {str(p): text for p, text in sources.items()}
    if instances and str(path) not in texts:
        texts[str(path)] = Path(path).read_text(errors="replace")

    used = list(arguments)

    def parsed(references: Sequence[str]):
        """The unit and the errors the ``references`` caused (an error of the file's own, in
        a function no instance reaches, is ``_read``'s to judge)."""
        for _ in range(_AMENDS):
            given = [(p, t + "\n" + "".join(references) if p == str(path) else t) for p, t in texts.items()]
            unit = ci.Index.create().parse(str(path), args=used, unsaved_files=given or None)
            errors = errors_of(ci, unit)
            amended = with_template_keywords(errors, texts) if errors else {}
            if not amended:
                break
            if any(not editable(name) for name in amended) and "-include-pch" in used:
                # a kept header's text, which its precompiled form holds as it was: read without it
                at = used.index("-include-pch")
                del used[at:at + 2]
            texts.update(amended)
        first = texts[str(path)].count("\n") + 2 if references else None  # (the references' first line)
        return unit, [d for d in errors if first is None or _requested_after(d, path, first)]

    unread = None
    if instances:
        unit, errors = parsed(instances)
        if not errors or any(d.location.file is not None and d.location.is_in_system_header for d in errors):
            return unit, None  # (a kept header that does not compile: the file does not, instances or not)
        unread = errors[0].spelling
        # one instance that does not compile leaves the others theirs
        kept = [one for one in instances if not parsed([one])[1]] if len(instances) > 1 else []
        if kept and not (found := parsed(kept))[1]:
            return found[0], unread
    return parsed([])[0], unread


def _requested_after(diagnostic, path: Path, line: int) -> bool:
    """Whether ``diagnostic`` is in ``path`` from ``line`` on, or in an instantiation requested
    there (the references to kernel template instances appended to the file)."""
    return any(where.file is not None and where.line >= line and _key(Path(where.file.name)) == _key(path)
               for where in (diagnostic.location, *(c.location for c in diagnostic.children)))


_AMENDS = 4
"""Parses a file may take while Clang reports what nvcc would accept (each amends what it
reported: a name's error may hide the next in the same instance)."""


def _instances(walker: Walker, parent, ck):
    """The definitions of the kernel template instances the file's references name
    (``instances.instance_reference``), as Clang instantiated them."""
    for cursor in parent.get_children():
        if cursor.kind != ck.NAMESPACE or not walker.is_user(cursor):
            continue
        if not cursor.spelling.startswith(INSTANCE_NAMESPACE):
            yield from _instances(walker, cursor, ck)
            continue
        for variable in cursor.get_children():
            named = next((n for n in variable.walk_preorder() if n.kind == ck.DECL_REF_EXPR), None)
            instance = named.referenced if named is not None else None
            definition = instance.get_definition() if instance is not None else None
            if variable.kind == ck.VAR_DECL and definition is not None:
                yield definition


def _instances_read(template: FunctionMeaning, instances: Sequence[FunctionMeaning]) -> FunctionMeaning:
    """What a kernel template reaches, as its instances found it (where any was read): each
    dependent call resolved to what runs, not to a template that names nothing."""
    mine = [c for c in instances if _key(c.file) == _key(template.file) and c.name == template.name
            and template.first_line <= c.first_line <= template.last_line]
    if not mine:
        return template
    uses: dict = {}
    for use in (u for c in mine for u in c.uses):
        record_use(uses, use)
    return FunctionMeaning(template.file, template.name, template.first_line, template.last_line,
                           tuple(uses.values()))
