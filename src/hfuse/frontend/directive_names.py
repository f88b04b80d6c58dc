"""What using-directives bring into lookup, and which file-scope names of one input another
input's directive may make ambiguous.

Compiled apart, an input's code saw its own file's names only. In the fused file it also
sees every other input's file-scope definitions: harmless where the names differ, but where
input B writes ``using namespace cute;`` and input A defines ``struct Shape`` at file scope,
B's ``Shape<_64, _64>`` (cute's) and the fused kernel's parameter ``Shape s`` (A's) both
become ambiguous between ``::Shape`` and ``cute::Shape``, and nvcc refuses the file. So such
a definition of A's is given to A's part under a name of its own, as when two inputs define
one name (``Program.symbols``): each part keeps what it meant.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Sequence

from .model import SourceFile, TopLevelItem, scope_names

DEVICE_NAMESPACES = ("cooperative_groups", "cub", "nvcuda", "cuda", "wmma")
"""The toolkit's device-code namespaces (its headers are kept, never read into the output)."""
STD = "std"
LIBRARY_NAMESPACES = (*DEVICE_NAMESPACES, STD, "thrust", "cute", "cutlass", "at", "c10", "torch", "caffe2")
"""Namespaces that headers hfuse keeps as ``#include`` lines define, whatever the user adds to them."""

IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
"""Names as code looks them up (not a member after ``.``, nor a literal's suffix ``1.f``)."""


def namespace_members(sources: Sequence[SourceFile]) -> dict[str, set[str]]:
    """The names the user's files declare in each of their namespaces (those of nested
    namespaces too, and the nested namespaces' own): what a directive of it brings into
    lookup, where no header hfuse keeps may extend it. Such a header is taken to extend the
    namespaces of ``LIBRARY_NAMESPACES`` and any named as a folder or file of its path
    (``<vendor/ops.h>``: ``vendor`` and ``ops``)."""
    kept = {word.lower() for source in sources for line in source.kept_includes
            for path in re.findall(r'[<"]([^>"]+)[>"]', line) for word in re.split(r"[/\\.]", path)}
    members: dict[str, set[str]] = {}
    for item in (item for source in sources for item in source.items):
        names = scope_names(item.scope)
        for depth in range(1, len(names) + 1):
            namespace = "::".join(names[:depth])
            found = members.setdefault(namespace, set())
            found.update(names[depth:depth + 1] or item.names)
    return {n: found for n, found in members.items()
            if n.split("::")[0] not in LIBRARY_NAMESPACES and n.split("::")[0].lower() not in kept}


def nominated(item: TopLevelItem) -> str:
    """The namespace ``using namespace N;`` names, as written (not resolved against the
    namespace the directive stands in: one that is not a key of ``namespace_members`` counts
    as a library's, which errs toward renaming)."""
    return (item.nominates or "").removeprefix("::")


def exposed_to_directives(files: Sequence[SourceFile], renamable: Callable[[TopLevelItem], bool],
                          ) -> dict[str, dict[Path, TopLevelItem]]:
    """File-scope types and constants of one input (``renamable`` ones, not templates) whose
    name another input's using-directive may also bring: by name, then by the input that
    defines it. Only those the other input's code mentions, or that a kernel's parameters of
    the defining input name (the fused kernel's signature stands after every directive), and
    only where a directive is a library's (whose names no file of the user's declares, so
    the other input's code can mean nothing else by the name). Where a namespace of the
    user's files has the name, ``codegen.directive_scope`` decides (it sees both)."""
    members = namespace_members(files)
    defined = {source.path: {key for item in source.items for key in item.keys} for source in files}
    exposed: dict[str, dict[Path, TopLevelItem]] = {}
    for other in files:
        directives = [nominated(i) for i in other.items if i.kind == "using" and i.nominates and not i.keys]
        if not directives:
            continue
        mentioned = {name for item in other.items if item.kind != "include" for name in IDENTIFIER.findall(item.text)}
        for source in files:
            if source.path == other.path:
                continue
            in_signatures = {name for f in source.functions if f.kind == "global" for p in f.params
                             for name in IDENTIFIER.findall(p.text)}
            for item in source.items:
                if item.scope or not renamable(item) or item.text.lstrip().startswith("template"):
                    continue
                for name in item.keys:
                    if name in defined[other.path] or (name not in mentioned and name not in in_signatures):
                        continue  # (what both define is renamed as any clash is)
                    if all(d in members for d in directives) or any(name in members.get(d, ()) for d in directives):
                        continue  # no library's directive; or a namespace of the user's has it (directive_scope)
                    exposed.setdefault(name, {})[source.path] = item
    return exposed
