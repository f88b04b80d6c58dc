"""Several source files seen as one translation unit, as the fused file will be."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HFuseError, Location
from .model import Function, SourceFile, TopLevelItem

_EXTERN_SHARED = re.compile(r"^\s*extern\s+(?:__shared__\s+)(?P<type>[^;\[]*?)\s*(?P<name>\w+)\s*\[\s*\]\s*;\s*$", re.S)


def _normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class Program:
    """The merged file-scope items of all inputs, deduplicated, with conflicts refused."""

    files: list[SourceFile]
    items: list[TopLevelItem] = field(default_factory=list)
    functions: dict[str, list[Function]] = field(default_factory=dict)
    """Device-side functions (helpers) by name; overloads share a name."""
    extern_shared: dict[str, str] = field(default_factory=dict)
    """File-scope ``extern __shared__`` arrays: name -> element type."""

    @classmethod
    def merge(cls, files: list[SourceFile]) -> "Program":
        program = cls(files=files)
        seen_text: set[str] = set()
        owner: dict[str, TopLevelItem] = {}
        for source in files:
            for item in source.items:
                fn = item.function
                if fn is not None and fn.kind == "host":
                    continue  # host code never reaches the fused file
                key = _normalised(item.text)
                if key in seen_text:
                    continue  # the same definition in two files appears once
                seen_text.add(key)
                if fn is None or fn.kind != "global":  # kernels are regenerated, never emitted as is
                    for name in item.names:
                        program._claim(owner, name, item)
                program.items.append(item)
                if fn is not None and fn.kind == "device":
                    program.functions.setdefault(fn.name, []).append(fn)
                match = _EXTERN_SHARED.match(item.text) if item.kind == "declaration" else None
                if match:
                    program.extern_shared[match.group("name")] = match.group("type").strip()
        return program

    @staticmethod
    def _claim(owner: dict[str, TopLevelItem], name: str, item: TopLevelItem) -> None:
        previous = owner.setdefault(name, item)
        if previous is item or previous.file == item.file:
            return  # overloads and redeclarations within one file are the compiler's business
        raise HFuseError(
            f"'{name}' is defined differently here and in {previous.file}:{previous.line}",
            Location(item.file, item.line),
            hint="rename one of them, or make both definitions identical",
        )

    def kernel(self, name: str, file: Path) -> Function:
        """The ``__global__`` function ``name`` of ``file``, or a clear error."""
        source = next((s for s in self.files if s.path == file), None)
        assert source is not None, file
        kernels = source.kernels
        if name in kernels:
            return kernels[name]
        helpers = [f for f in source.functions if f.name == name]
        if helpers:
            raise HFuseError(
                f"'{name}' is a {helpers[0].kind} function, not a __global__ kernel",
                Location(file, helpers[0].line, name),
            )
        close = difflib.get_close_matches(name, list(kernels), n=3)
        known = ", ".join(sorted(kernels)) or "none"
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        if re.search(rf"\bnamespace\b[\s\S]*\b{re.escape(name)}\s*\(", source.text):
            hint = "kernels inside a namespace are not supported yet: move it to file scope"
        raise HFuseError(f"no __global__ kernel named '{name}' (kernels in this file: {known})", Location(file, None, name), hint=hint)
