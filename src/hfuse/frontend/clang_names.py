"""The names the kept headers nobody checked declare, for a file Clang could not read.

Where Clang reads a file, it says what each of the user's functions reaches in the kept
headers (``clang.py``). Where it cannot (an error of Clang's in code the request reaches),
hfuse still knows which names those headers declare, from the headers alone (their
precompiled form compiled): a function of the file that names one of them, qualified or
as ordinary lookup finds it (its namespaces, the using-directives in force), may reach code
that reads the block, and is refused (``transform/header_reads.add_unread_names``). Once,
such a file was fused by the names alone: ``Reducer(s).sum(v)`` inside ``namespace lib``,
and ``lib::Reducer r(s); r.sum(v)``, synchronised the whole fused block.

Not counted: the host's C and C++ library (host code), the toolkit's global names (its
intrinsics and math, ``CHECKED_HEADERS``' territory) and the namespaces hfuse knows itself
(the C++ library's, libcu++'s, CUB's, cooperative groups', WMMA's).
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..toolkit import cuda_include_dirs
from .clang import cindex, host_cxx_dirs, unit_arguments
from .clang_meaning import Meaning
from .options import CompileOptions

KNOWN_NAMESPACES = ("std", "cuda::std", "cub", "cooperative_groups", "nvcuda", "__gnu_cxx", "__cxxabiv1")
"""Namespaces whose names need no Clang: the C++ library's (host or libcu++'s, reading nothing
of the block), CUB's and cooperative groups' (whose block-wide names hfuse's own analysis
knows), and WMMA's (a checked header)."""


@dataclass(frozen=True)
class HeaderNames:
    """Names declared at namespace scope by kept headers nobody checked."""

    declared: frozenset[str]
    """Qualified, inline namespaces left out (``lib::Reducer``, ``glob_block_sum``)."""
    nominated: frozenset[tuple[str, str]] = frozenset()
    """(namespace, namespace it nominates) of those headers' using-directives (``""``: global)."""

    def found(self, name: str, scopes: Sequence[str], usings: Iterable[str] = ()) -> str | None:
        """The declaration ordinary lookup of the unqualified ``name`` may find from a function
        in the namespaces ``scopes`` (innermost last, ``a::b``) with ``usings`` in force (and the
        headers' own using-directives), or None."""
        levels = ["::".join(scopes[:depth]) for depth in range(len(scopes), -1, -1)]
        searched = list(levels) + [u.lstrip(":") for u in usings]
        searched += [target for level in searched for scope, target in self.nominated if scope == level]
        for namespace in dict.fromkeys(searched):
            candidate = f"{namespace}::{name}" if namespace else name
            if candidate in self.declared:
                return candidate
        return None

    def qualified(self, written: str) -> str | None:
        """The declaration a qualified name as written (``lib::Reducer``, ``::lib::Reducer``)
        may be, or None."""
        parts = written.lstrip(":").split("::")
        if parts[0] in self.declared:
            return parts[0]  # (a member of a global class: Reducer::sum)
        prefixes = self._nominating({parts[0]})
        for part in parts[1:]:
            for prefix in sorted(prefixes):
                if f"{prefix}::{part}" in self.declared:
                    return f"{prefix}::{part}"  # (a member of a declared class: lib::Reducer::sum)
            prefixes = self._nominating({f"{prefix}::{part}" for prefix in prefixes})
        return None

    def _nominating(self, namespaces: set[str]) -> set[str]:
        """``namespaces`` and those their using-directives nominate, transitively (qualified
        lookup into namespace torch finds at's names: torch nominates at)."""
        found, todo = set(namespaces), list(namespaces)
        while todo:
            namespace = todo.pop()
            for scope, target in self.nominated:
                if scope == namespace and target not in found:
                    found.add(target)
                    todo.append(target)
        return found


@dataclass(frozen=True)
class UnreadFile:
    """A file Clang could not read, which keeps headers nobody checked."""

    why: str
    names: HeaderNames | str
    """What those headers declare, or why that is unknown too."""


@functools.lru_cache(maxsize=16)
def header_names(options: CompileOptions, kept_preamble: tuple[str, ...], cache: str) -> HeaderNames | str:
    """What the kept headers of ``kept_preamble`` declare, read by Clang from their
    precompiled form, or why that cannot be known."""
    ci, why = cindex()
    if ci is None:
        return why
    arguments = unit_arguments(ci, options, kept_preamble, Path(cache))
    if isinstance(arguments, Meaning):
        return arguments.unavailable or "Clang could not read the headers"
    if "-include-pch" not in arguments:
        return "Clang could not precompile the headers the file keeps"
    unit = ci.Index.create().parse("hfuse_names.cu", args=arguments, unsaved_files=[("hfuse_names.cu", "")])
    import clang

    resource = str(Path(clang.__file__).parent / "native")
    host = tuple(str(Path(d).resolve()) for d in host_cxx_dirs()) + (resource,)
    toolkit = tuple(str(Path(d).resolve()) for d in cuda_include_dirs(import_cupy=False))
    is_inline = ci.conf.lib.clang_Cursor_isInlineNamespace
    is_inline.argtypes, is_inline.restype = [ci.Cursor], ctypes.c_uint
    ck = ci.CursorKind
    named = {ck.FUNCTION_DECL, ck.FUNCTION_TEMPLATE, ck.CLASS_DECL, ck.STRUCT_DECL, ck.UNION_DECL,
             ck.CLASS_TEMPLATE, ck.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, ck.TYPEDEF_DECL, ck.TYPE_ALIAS_DECL,
             ck.TYPE_ALIAS_TEMPLATE_DECL, ck.VAR_DECL, ck.ENUM_DECL, ck.NAMESPACE_ALIAS, ck.USING_DECLARATION}
    declared: set[str] = set()
    nominated: set[tuple[str, str]] = set()
    folders: dict[str, str] = {}

    def where(cursor) -> str:
        """``host``, ``toolkit`` or ``library`` for the file a declaration is in."""
        file = cursor.location.file
        if file is None:
            return "host"
        name = file.name
        if name not in folders:
            real = str(Path(name).resolve())
            folders[name] = ("host" if real.startswith(host) else "toolkit" if real.startswith(toolkit)
                             else "library")
        return folders[name]

    def visit(parent, path: tuple[str, ...]) -> None:
        for cursor in parent.get_children():
            kind = cursor.kind
            if kind == ck.LINKAGE_SPEC:
                visit(cursor, path)
                continue
            if kind == ck.NAMESPACE:
                inner = path if is_inline(cursor) or not cursor.spelling else (*path, cursor.spelling)
                # (a CUB wrapped in a library's namespace, mylib::cub, is CUB: transform/opaque.cub_entity)
                if "::".join(inner) not in KNOWN_NAMESPACES and inner[-1:] != ("cub",) and where(cursor) != "host":
                    visit(cursor, inner)
                continue
            origin = where(cursor)
            if origin == "host" or origin == "toolkit" and not path:
                continue
            if kind == ck.USING_DIRECTIVE:
                # (``using namespace lib::detail;`` refers to lib, then to detail: the last is the one nominated)
                target = next((c.referenced for c in reversed(list(cursor.get_children()))
                               if c.kind == ck.NAMESPACE_REF), None)
                if target is not None:
                    nominated.add(("::".join(path), _qualified(target, is_inline, ck)))
            elif kind in named and cursor.spelling:
                declared.add("::".join((*path, cursor.spelling)))
                if kind == ck.ENUM_DECL and not cursor.is_scoped_enum():
                    declared.update("::".join((*path, c.spelling)) for c in cursor.get_children()
                                    if c.kind == ck.ENUM_CONSTANT_DECL)

    visit(unit.cursor, ())
    return HeaderNames(frozenset(declared), frozenset(nominated))


def _qualified(namespace, is_inline, ck) -> str:
    """A namespace's name from the global one, inline namespaces left out."""
    parts = []
    while namespace is not None and namespace.kind == ck.NAMESPACE:
        if not is_inline(namespace) and namespace.spelling:
            parts.append(namespace.spelling)
        namespace = namespace.semantic_parent
    return "::".join(reversed(parts))
