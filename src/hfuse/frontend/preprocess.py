"""Preprocessing as nvcc's device pass sees the file, with every line traced to its origin.

Kernel bodies use macros, sit under ``#ifdef``s and include guards, and call helpers
defined in the user's headers. tree-sitter parses text as written, so hfuse must see
what the compiler sees: conditionals decided, macros expanded, the user's headers read.
We run pcpp (a real C preprocessor) configured as the device pass of
``nvcc -arch=sm_XX``:

* **Conditionals** are decided with nvcc's predefined macros (``__CUDACC__``,
  ``__CUDA_ARCH__``, ``__cplusplus`` per ``-std``...), then ``-D`` in order, then ``-U``.
  An unknown identifier is 0 and ``defined(UNKNOWN)`` is false, as in any preprocessor.
* **Headers** found beside the including file (``"..."`` only) or in ``-I`` folders are
  the user's: read and expanded in place (include guards and ``#pragma once`` honoured).
  Toolkit headers (``<cuda_fp16.h>``, CCCL) and system headers are *kept* as ``#include``
  lines and never read: their macros would rewrite ``__device__`` and friends, and the
  fused file is compiled against them anyway.
* **Comments** never reach a macro's body or argument (see ``comments.quiet_comments``); other
  comments stay in the code.
* **Origins**: every line of the output knows the (file, line) it came from, including
  lines of inlined headers, so errors point at the user's own lines.

The output has no ``#line`` markers: content lines are placed at their line within their
file (gaps padded with blank lines), so within a file lines keep their numbers.
"""
from __future__ import annotations

import copy
import functools
import glob
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import pcpp

from ..errors import HFuseError, Location
from ..toolkit import cuda_include_dirs, pytorch_include_dirs
from .comments import quiet_comments
from .lines import ENTER, content_lines, place, pragma_lines, written_include
from .model import UserMacro
from .options import NO_OPTIONS, CompileOptions
from .parse import read_source_file
from .library_text import library_mentions
from .system_macros import header_macros, is_macro_like, pure_value, standard_macro_names, structural

CUDACC_VERSION = (13, 0)
"""The nvcc whose device pass we model (``__CUDACC_VER_MAJOR__``/``__CUDACC_VER_MINOR__``)."""

CPLUSPLUS = {"c++11": "201103L", "c++14": "201402L", "c++17": "201703L", "c++20": "202002L"}

MAX_INCLUDE_DEPTH = 200
"""As deep as GCC's limit: deeper is a header including itself without a guard."""

_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|elif|ifdef|ifndef)\b(.*)$", re.M)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_DEFINED = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
_DEFINITION = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?:\([^)]*\))?((?:[^\n\\]|\\\n|\\)*)", re.M)
"""A ``#define``'s name and value (continued lines included)."""
_ARCH_NAME = re.compile(r"\b__CUDA_ARCH\w*")
_DEVICE_PASS_TEST = re.compile(r"defined\s*\(\s*__CUDA_ARCH__\s*\)|defined\s+__CUDA_ARCH__\b"
                               r"|#[ \t]*ifn?def[ \t]+__CUDA_ARCH__\b")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


@dataclass(frozen=True)
class PreprocessedSource:
    """One source file as the device pass sees it, and where each of its lines came from."""

    path: Path
    """The source file preprocessed (as given, so locations match the user's spelling)."""
    text: str
    """Expanded text: user headers inlined where included, kept ``#include`` lines verbatim,
    no ``#line`` markers."""
    origins: tuple[tuple[Path, int], ...]
    """For each line of ``text`` (index 0 = line 1): the (file, 1-based line) it came from."""
    headers: tuple[Path, ...] = ()
    """User headers read (resolved paths, in first-read order): part of the source's identity."""
    kept_includes: tuple[str, ...] = ()
    """The ``#include`` lines left in ``text`` (toolkit/system headers), in order, deduplicated."""
    kept_preamble: tuple[str, ...] = ()
    """Those lines, each after the ``#define``s and ``#undef``s that bring the user's macros
    (include guards aside) to what they were where the file includes it: what a compiler
    reading the kept headers apart from the file must read them with (``#define
    CUB_WRAPPED_NAMESPACE mylib`` puts CUB in ``mylib::cub``; a header may test or call a
    function-like macro of the user's too)."""
    library_macros: frozenset[str] = frozenset()
    """The user's macros defined above a kept header that an installed library's headers it
    reaches mention (``library_text``): they may configure them."""
    value_macros: tuple[tuple[str, str], ...] = ()
    """Macros of kept system headers the code uses as plain values (no syntax, no calls:
    ``C10_WARP_SIZE``, ``CEIL_DIV(a, b)``), left as written: known, so never opaque.
    ``(name or name(params), value)`` as the host compiler gave them, with the ones their
    values name (for NVRTC, which does not read such headers: ``codegen/includes.py``)."""
    arch_macros: tuple[str, ...] = ()
    """The ``__CUDA_ARCH__``-family macros the user's text depends on beyond ``#ifdef
    __CUDA_ARCH__`` (``#if __CUDA_ARCH__ >= 800``, ``__CUDA_ARCH_FEAT_SM90_ALL``): the
    expanded text holds for the architecture it was preprocessed for alone."""
    user_macros: tuple[UserMacro, ...] = ()
    """The macros the file and the user's headers define, as they stand at the end."""
    expansions: tuple[str, ...] = ()
    """The texts ``preprocess`` was asked to expand, with the file's macros as they stand at
    its end (a kernel's template arguments as the request wrote them: ``QK4_0`` -> ``32``)."""

    def origin(self, line: int) -> tuple[Path, int]:
        """1-based line of ``text`` -> (file, line) it came from.

        A line past the end (tree-sitter may report the end of the text) maps to the
        source file itself."""
        if 1 <= line <= len(self.origins):
            return self.origins[line - 1]
        if line < 1:
            raise ValueError(f"line numbers start at 1, not {line}")
        return (self.path, line)


TOOLKIT_HEADER_MACROS: dict[str, tuple[tuple[str, str], ...]] = {
    "cuda.h": (("CUDA_VERSION", str(CUDACC_VERSION[0] * 1000 + CUDACC_VERSION[1] * 10)),),
}
"""What a kept toolkit header defines that code tests (``#if CUDA_VERSION >= 12000``): the
device pass does not read the header, nvcc's does."""


def predefined_macros(options: CompileOptions) -> list[tuple[str, str]]:
    """The macros nvcc's device pass defines before the user's ``-D`` (``nvcc --dryrun``
    shows them), plus ``CUDART_VERSION`` from the ``cuda_runtime.h`` nvcc includes
    implicitly, and the host platform's (nvcc preprocesses with the host compiler)."""
    major, minor = CUDACC_VERSION
    macros = [
        ("__CUDACC__", "1"), ("__NVCC__", "1"), *options.arch_macros,
        ("__CUDACC_VER_MAJOR__", str(major)), ("__CUDACC_VER_MINOR__", str(minor)),
        ("__CUDA_API_VER_MAJOR__", str(major)), ("__CUDA_API_VER_MINOR__", str(minor)),
        ("__NVCC_DIAG_PRAGMA_SUPPORT__", "1"), ("__CUDACC_DEVICE_ATOMIC_BUILTINS__", "1"),
        ("CUDA_DOUBLE_MATH_FUNCTIONS", "1"), ("__CUDA_ARCH_HAS_FEATURE__(_FEAT)", "__CUDA_ARCH_FEAT_##_FEAT"),
        ("CUDART_VERSION", str(major * 1000 + minor * 10)),
        ("__cplusplus", CPLUSPLUS[options.std]),
    ]
    if sys.platform.startswith("linux"):
        macros += [("__linux__", "1"), ("__unix__", "1")]
    machine = {"x86_64": "__x86_64__", "amd64": "__x86_64__", "aarch64": "__aarch64__", "arm64": "__aarch64__"}
    if (name := machine.get(platform.machine().lower())) is not None:
        macros += [(name, "1"), ("__LP64__", "1")]
    return macros


# -- where headers are ------------------------------------------------------------------

@functools.cache
def kept_header_dirs() -> tuple[Path, ...]:
    """Folders whose headers stay ``#include`` lines: the CUDA toolkit's (CCCL included)
    and the system's. A header there is never the user's, even when an ``-I`` reaches it."""
    dirs = [Path(d) for d in cuda_include_dirs(import_cupy=False)]
    dirs += [Path("/usr/local/cuda/include"), Path("/usr/local/cuda/include/cccl")]
    dirs += [Path("/usr/local/include"), Path("/usr/include")]
    dirs += [Path(d) for d in sorted(glob.glob("/usr/include/c++/*")) + sorted(glob.glob("/usr/include/*-linux-gnu"))]
    found: list[Path] = []
    for d in dirs:
        if d.is_dir() and (r := d.resolve()) not in found:
            found.append(r)
    return tuple(found)


def library_header_dirs(options: CompileOptions) -> tuple[Path, ...]:
    """Folders of installed libraries' headers, kept as ``#include`` lines and read only for
    their macros (and by Clang): ``-isystem`` folders, ``-I`` folders of another project
    (``CompileOptions.for_inputs``: an installed Python package, a submodule or other
    checkout, a ``third_party`` folder), and PyTorch's own folders when it is installed (searched last: they
    find only what nothing else has, ``<torch/extension.h>``, ``<Python.h>``)."""
    dirs = [*options.system_include_dirs, *(d for d in options.include_dirs if options.is_library_dir(d)),
            *pytorch_include_dirs()]
    return tuple(dict.fromkeys(d.resolve() for d in dirs if d.is_dir()))


@dataclass(frozen=True)
class HeaderSearch:
    """nvcc's search order, split into the user's headers and the kept ones."""

    user_dirs: tuple[Path, ...]
    kept_dirs: tuple[Path, ...]
    library_dirs: tuple[Path, ...] = ()
    """Installed libraries' folders (part of ``kept_dirs``): their macros come from the host
    compiler, given these folders."""

    @classmethod
    def of(cls, options: CompileOptions) -> "HeaderSearch":
        libraries = library_header_dirs(options)
        user = tuple(d for d in options.include_dirs if not options.is_library_dir(d))
        return cls(user, kept_header_dirs() + tuple(d for d in libraries if d not in kept_header_dirs()), libraries)

    def user_header(self, name: str, angled: bool, current_dir: Path) -> Path | None:
        """``"name"``: the including file's folder, then ``-I``; ``<name>``: ``-I`` only.
        None when not found there, or found inside a toolkit/system folder."""
        for folder in ([] if angled else [current_dir]) + list(self.user_dirs):
            candidate = folder / name
            if candidate.is_file():
                resolved = candidate.resolve()
                if any(resolved.is_relative_to(k) for k in self.kept_dirs):
                    return None
                return resolved
        return None

    def kept_header(self, name: str) -> bool:
        return any((folder / name).is_file() for folder in self.kept_dirs)

    def system_header(self, name: str) -> bool:
        """Found in the system's folders and not in the CUDA toolkit's (whose macros are the
        device pass's own business)."""
        for folder in self.kept_dirs:
            if (folder / name).is_file():
                return not any(part.startswith("cuda") or part in ("cccl", "nvidia") for part in folder.parts)
        return False


# -- the preprocessor -------------------------------------------------------------------

ALTERNATIVE_TOKENS = {"and": "&&", "or": "||", "not": "!", "bitand": "&", "bitor": "|", "xor": "^",
                      "compl": "~", "not_eq": "!="}
"""C++'s alternative spellings of the operators an ``#if`` can use ([lex.digraph])."""


class _DevicePass(pcpp.Preprocessor):
    """pcpp configured as nvcc's device pass: our include search, errors as HFuseError."""

    def __init__(self, options: CompileOptions, search: HeaderSearch, files: dict[str, Path]):
        super().__init__()
        self.rewrite_paths = []  # token sources stay the paths we give (no cwd-relative rewriting)
        self.line_directive = None
        self.undef("__PCPP__")
        self.search = search
        self.files = files
        """pcpp's source strings -> the paths we report."""
        self.dirs: list[Path] = []
        """Folders of the files being read, innermost last (``#include "..."`` looks there first)."""
        self.headers: list[Path] = []
        self.kept: list[str] = []
        self.kept_preamble: list[str] = []
        self.configured: dict[str, str] = {}
        """The user's macros (name -> ``#define`` line) as ``kept_preamble`` last left them."""
        self.std = options.std
        self.system_macros: dict[str, tuple[str, str]] = {}
        """What the kept system headers define: name -> (name or name(params), value)."""
        self.tested: set[str] = set()
        """Names the conditionals of the files read so far test."""
        self.file_defined: set[str] = set()
        """Names the files read so far ``#define`` (include guards...): never asked about."""
        self.system_headers: list[str] = []
        """Kept system headers whose macros were not asked for yet."""
        self.code_names: set[str] = set()
        """Names the files read so far use anywhere (code and macro bodies)."""
        self.arch_macros: set[str] = set()
        """``__CUDA_ARCH__``-family macros the files use for more than telling the device
        pass from the host's: what they decide holds for ``options.arch`` alone."""
        self.predefined = tuple(predefined_macros(options))
        for name, value in self.predefined:
            self.define(f"{name} {value}")
        for d in options.defines:
            self.define(f"{d.name} {d.value}")
        self.define("__has_include(x) 0")  # so that defined(__has_include) holds; calls: see _has_include
        for name in options.undefines:
            self.undef(name)

    # where -------------------------------------------------------------------------
    def location(self, source: str | None, line: int | None) -> Location:
        path = self.files.get(source or "") or (Path(source) if source and source != "unknown" else None)
        return Location(path, line or None)

    def _where(self, tokens: Iterable) -> Location:
        tok = next((t for t in tokens if t.type not in self.t_WS), None)
        return self.location(tok.source, tok.lineno) if tok is not None else Location()

    # hooks -------------------------------------------------------------------------
    def group_lines(self, input: str, abssource: str) -> Iterator[list]:
        for line in super().group_lines(input, abssource):
            yield quiet_comments(line, self)

    def on_comment(self, tok) -> bool:
        return True  # already made harmless by quiet_comments

    def on_error(self, file, line, msg) -> None:
        raise HFuseError(f"preprocessing failed: {msg}", self.location(file, line),
                         hint="the preprocessor (as nvcc's device pass) rejects this line; check it compiles with nvcc "
                              "and the same -I/-D/-U options")

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "pragma" and toks and toks[0].value == "unroll":
            self._expand_unroll_count(toks[1:])
            return None
        if directive.value == "error":
            message = "".join(t.value for t in toks).strip()
            raise HFuseError(f"#error {message}", self.location(directive.source, directive.lineno),
                             hint="the file stops itself here under these options; nvcc would too: "
                                  "check the -D/-U flags (and the target architecture)")
        if directive.value in ("warning", "line"):
            return True  # dropped: no #line markers in the text, warnings are the compiler's business
        return None  # #pragma and the like pass through

    def _expand_unroll_count(self, count: list) -> None:
        """``#pragma unroll UNROLL``: nvcc reads the count as an expression, macros
        expanded; the line passes through, so its tokens take the expansion's text (the
        fused file never gives a directive its macros back: ``codegen/macros.py``)."""
        written = [t for t in count if t.type not in self.t_WS]
        if not written:
            return
        expanded = "".join(t.value for t in self.expand_macros([copy.copy(t) for t in count])).strip()
        written[0].value = expanded
        for token in written[1:]:
            token.value = ""

    def evalexpr(self, tokens):
        return super().evalexpr(self._has_include(self._alternative_tokens(tokens)))

    def _alternative_tokens(self, tokens: list) -> list:
        """C++'s operator words (``#if defined(A) and not defined(B)``) -> their symbols.

        They are operators in C++, never macro names, and pcpp reads them as identifiers
        (evaluated as 0, or refused).
        """
        out = []
        for tok in tokens:
            spelling = ALTERNATIVE_TOKENS.get(tok.value) if tok.type == self.t_ID else None
            if spelling is None:
                out.append(tok)
                continue
            lexer = self.lexer.clone()
            lexer.input(spelling)
            symbol = copy.copy(tok)
            symbol.type, symbol.value = lexer.token().type, spelling
            out.append(symbol)
        return out

    def _has_include(self, tokens: list) -> list:
        """``__has_include("x.h")``/``(<x.h>)`` -> 1 or 0, by our search (pcpp lacks it)."""
        out, i = [], 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == self.t_ID and tok.value in ("__has_include", "__has_include_next"):
                j = i + 1
                while j < len(tokens) and tokens[j].type in self.t_WS:
                    j += 1
                end = j
                while end < len(tokens) and tokens[end].value != ")":
                    end += 1
                inner = self.tokenstrip(tokens[j + 1 : end])
                if j < len(tokens) and tokens[j].value == "(" and end < len(tokens) and inner:
                    name, angled = self._header_name(inner, self._where([tok]))
                    found = self.search.user_header(name, angled, self.dirs[-1]) or self.search.kept_header(name)
                    number = copy.copy(tok)
                    number.type, number.value = self.t_INTEGER, self.t_INTEGER_TYPE("1" if found else "0")
                    out.append(number)
                    i = end + 1
                    continue
            out.append(tok)
            i += 1
        return out

    # includes ------------------------------------------------------------------------
    def _header_name(self, tokens: list, where: Location) -> tuple[str, bool]:
        if tokens and tokens[0].type == self.t_STRING and tokens[0].value.startswith('"'):
            return tokens[0].value[1:-1], False
        if tokens and tokens[0].value == "<":
            close = next((i for i, t in enumerate(tokens) if t.value == ">"), None)
            if close is not None:
                return "".join(t.value for t in tokens[1:close]), True
        raise HFuseError(f"malformed #include: {''.join(t.value for t in tokens).strip()}", where,
                         hint='write #include "file.h" or #include <file.h>')

    def include(self, tokens, original_line):
        """Replaces pcpp's search: user headers are read, toolkit/system ones kept."""
        if not tokens:
            return
        if tokens[0].value != "<" and tokens[0].type != self.t_STRING:
            tokens = self.tokenstrip(self.expand_macros(tokens))
        # ``#include CUDA_STD_HEADER(cassert)``: the name a macro makes (pcpp expands it first)
        written = [t for t in original_line if t.type not in self.t_WS and t.value not in ("#", "include")]
        computed = bool(written) and written[0].value != "<" and written[0].type != self.t_STRING
        where = self._where(original_line)
        name, angled = self._header_name(tokens, where)
        found = self.search.user_header(name, angled, self.dirs[-1])
        if found is not None:
            yield self._marker(original_line)
            yield from self.read_header(found, name, where)
            return
        if angled or self.search.kept_header(name):
            if computed:  # kept as the name it made: the output need not define the macro before it
                original_line = written_include(original_line, f"<{name}>" if angled else f'"{name}"')
            line = "".join(t.value for t in original_line).strip()
            if line not in self.kept:
                self.kept.append(line)
                self.note_kept(line)
                if self.search.system_header(name):
                    self.define_system_macros(name)
                for macro, value in TOOLKIT_HEADER_MACROS.get(name, ()):
                    if macro not in self.macros:
                        self.define(f"{macro} {value}")
            yield from original_line
            return
        looked = [str(self.dirs[-1])] + [str(d) for d in self.search.user_dirs]
        raise HFuseError(
            f'cannot find the header "{name}" (looked in {", ".join(dict.fromkeys(looked))} and the CUDA toolkit)',
            where, hint="pass the folder that holds it with -I DIR (or 'include_dirs' under 'compile:' in a config)",
        )

    def note_kept(self, line: str) -> None:
        """``line`` on ``kept_preamble``, after what changed in the user's macros since the last."""
        now = {m.name: " ".join(m.definition.split("\n")) for m in self.user_macros() if not m.include_guard}
        self.kept_preamble += [d for name, d in now.items() if self.configured.get(name) != d]
        self.kept_preamble += [f"#undef {name}" for name in self.configured if name not in now]
        self.configured = now
        self.kept_preamble.append(line)

    def define_system_macros(self, header: str) -> None:
        """A kept system header: what it defines (``_POSIX_VERSION``, ``UCHAR_MAX``) is asked of
        the host compiler once some conditional tests a name nothing else defines."""
        self.system_headers.append(header)
        self.define_tested_macros()

    def note_conditionals(self, text: str) -> None:
        """The names a file's ``#if``/``#ifdef`` lines test, ``#define``s and uses (read
        before its lines are)."""
        for line in _CONDITIONAL.findall(text):
            self.tested.update(_IDENTIFIER.findall(line))
        self.file_defined.update(_DEFINED.findall(text))
        # a tested macro of the file's own tests what its value names (``#if HAS_WARP_MERGE_SORT()``
        # with ``HAS_WARP_MERGE_SORT() (CUDA_VERSION >= 11060)``: CUDA_VERSION of a kept header's cuda.h)
        values: dict[str, set[str]] = {}
        for name, value in _DEFINITION.findall(text):
            values.setdefault(name, set()).update(_IDENTIFIER.findall(value))
        todo = [n for n in values if n in self.tested]
        while todo:
            for named in values.pop(todo.pop(), set()) - self.tested:
                self.tested.add(named)
                if named in values:
                    todo.append(named)
        self.code_names.update(_IDENTIFIER.findall(text))
        # whether this is the device pass is the same for every GPU; its number and variant are not
        self.arch_macros.update(_ARCH_NAME.findall(_DEVICE_PASS_TEST.sub(" ", _COMMENT.sub(" ", text))))
        self.define_tested_macros()

    def define_tested_macros(self) -> None:
        """System macros that some conditional tests, or that code uses and that expand to
        syntax hfuse must see (``structural``), and what their values name, become macros of
        the device pass. Only those: a system macro used in code as a value (``M_PI``,
        ``C10_WARP_SIZE``) stays as written, for the kept ``#include`` to define (the user's
        text keeps its spelling)."""
        unknown = {n for n in self.tested if n not in self.macros and n not in self.file_defined}
        maybe = {n for n in self.code_names if is_macro_like(n) and n not in self.macros
                 and n not in self.file_defined}
        if not unknown and not maybe:
            return
        if self.system_headers:
            libraries = tuple(str(d) for d in self.search.library_dirs)
            pending = tuple(sorted(set(self.system_headers)))
            self.system_headers.clear()
            for key, value in header_macros(pending, self.std, libraries, self.predefined,
                                            tuple(cuda_include_dirs(import_cupy=False))):
                self.system_macros.setdefault(key.split("(")[0], (key, value))
        used = {n for n in self.code_names if is_macro_like(n) and n in self.system_macros and n not in self.macros
                and n not in self.file_defined and structural(self.system_macros, n)}
        # a tested macro with every macro its value names (the condition is evaluated here);
        # a structural one with the structural macros its value names (values keep their spelling)
        todo = [(n, True) for n in unknown if n in self.system_macros] + [(n, False) for n in used]
        while todo:
            name, tested = todo.pop()
            if name in self.macros or name not in self.system_macros:
                continue
            key, value = self.system_macros[name]
            self.define(f"{key} {value}")
            todo.extend((n, tested) for n in _IDENTIFIER.findall(value)
                        if tested or (n in self.system_macros and structural(self.system_macros, n)))

    def value_macros(self) -> tuple[tuple[str, str], ...]:
        """The system macros the code uses that stay as written and are pure values, and
        the system macros their values name (definitions, by name); not the C and C++
        library's (``FLT_MAX``: NVRTC has those from the include plan's stand-ins)."""
        if not self.system_macros:
            return ()  # no kept header was asked about: nothing to know (and no compiler run)
        # the code's names, and those the system macros expanded in it name
        named = self.code_names | {n for m in self.macros if m in self.system_macros
                                   for n in _IDENTIFIER.findall(self.system_macros[m][1])}
        standard = standard_macro_names(self.std, self.predefined)
        todo = [n for n in named if is_macro_like(n) and n in self.system_macros and n not in self.macros
                and n not in standard and pure_value(self.system_macros, n)]
        found: dict[str, tuple[str, str]] = {}
        while todo:
            name = todo.pop()
            if name not in found and name in self.system_macros and name not in self.macros and name not in standard:
                found[name] = self.system_macros[name]
                todo.extend(_IDENTIFIER.findall(found[name][1]))
        return tuple(found[n] for n in sorted(found))

    def user_macros(self) -> tuple[UserMacro, ...]:
        """The macros defined by the files read (the user's), not nvcc's, ``-D``'s or a system header's."""
        found = []
        for name, macro in self.macros.items():
            path = self.files.get(getattr(macro, "source", None) or "")
            if path is None:
                continue
            params = None
            if macro.arglist is not None:
                params = tuple("..." if a == "__VA_ARGS__" else a for a in macro.arglist)
                if macro.variadic and params and params[-1] != "...":
                    params = (*params[:-1], f"{params[-1]}...")
            value = "".join(t.value for t in macro.value).strip()
            found.append(UserMacro(name, params, value, path, getattr(macro, "lineno", 0) or 0))
        return tuple(sorted(found, key=lambda m: m.name))

    def _marker(self, original_line: list):
        tok = copy.copy(next(t for t in original_line if t.type not in self.t_WS))
        tok.type, tok.value = ENTER, ""
        return tok

    def read_header(self, path: Path, name: str, where: Location) -> Iterator:
        """Expands a user header in place, once if it is guarded or ``#pragma once``."""
        key = str(path)
        if key in self.include_once:
            guard = self.include_once[key]  # None: #pragma once; else its include-guard macro
            if guard is None or guard in self.macros:
                return
        if self.include_depth >= MAX_INCLUDE_DEPTH:
            raise HFuseError(f'#include "{name}" nested more than {MAX_INCLUDE_DEPTH} deep', where,
                             hint="a header includes itself: give it an include guard or #pragma once")
        data = read_source_file(path, "header", where)
        self.note_conditionals(data)
        if path not in self.headers:
            self.headers.append(path)
        self.files[key] = path
        self.dirs.append(path.parent)
        try:
            yield from self.parsegen(data.removeprefix("\ufeff"), name, key)
        finally:
            self.dirs.pop()

    def pre_include(self, file: Path, main: str) -> Iterator:
        """``-include FILE``: as if ``#include "FILE"`` opened the source, searched from the
        working folder first (as GCC and nvcc do), then ``-I``."""
        where = Location(file)
        found = self.search.user_header(str(file), False, Path.cwd())
        if found is not None:
            yield from self.read_header(found, str(file), where)
            return
        if not self.search.kept_header(str(file)):
            raise HFuseError(f"cannot find the -include file {file}", where,
                             hint="give a path relative to the working folder (or the config file), or its folder with -I DIR")
        tokens = self.tokenize(f'#include "{file}"\n')
        for tok in tokens:
            tok.source, tok.lineno = main, 1
        self.kept.append(f'#include "{file}"')
        yield from tokens


# -- lines and origins ------------------------------------------------------------------

def preprocess(text: str, path: str | Path, options: CompileOptions = NO_OPTIONS,
               expand: Sequence[str] = ()) -> PreprocessedSource:
    """Preprocess ``text`` (the contents of ``path``) as nvcc's device pass would, and
    ``expand`` (code that names this file's macros from outside it) after its last line.

    Raises ``HFuseError`` with the file and line for ``#error``, a quoted header found
    nowhere, and input the preprocessor rejects.
    """
    path = Path(path)
    main = str(path)
    search = HeaderSearch.of(options)
    files = {main: path}
    pp = _DevicePass(options, search, files)
    pp.dirs.append(Path(os.path.dirname(os.path.abspath(main))))

    pp.note_conditionals("\n".join((text, *expand)))

    def tokens() -> Iterator:
        for file in options.pre_includes:
            yield from pp.pre_include(file, main)
        yield from pp.parsegen(text.removeprefix("\ufeff"), main, main)

    lines, origins = place(pragma_lines(content_lines(tokens(), pp.t_WS, pp.t_COMMENT)), files, path)
    expansions = tuple("".join(t.value for t in pp.expand_macros(pp.tokenize(e))).strip() for e in expand)
    return PreprocessedSource(
        path=path,
        text="\n".join(lines) + "\n" if lines else "",
        origins=tuple(origins),
        headers=tuple(pp.headers),
        kept_includes=tuple(dict.fromkeys(pp.kept)),
        kept_preamble=tuple(pp.kept_preamble),
        library_macros=library_mentions({d.split()[1].split("(")[0] for d in pp.kept_preamble if d.startswith("#define")},
                                        pp.kept, search.library_dirs),
        value_macros=pp.value_macros(),
        arch_macros=tuple(sorted(pp.arch_macros)),
        user_macros=pp.user_macros(),
        expansions=expansions,
    )


__all__ = ["PreprocessedSource", "preprocess", "predefined_macros", "HeaderSearch", "kept_header_dirs",
           "library_header_dirs"]

