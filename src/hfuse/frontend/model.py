"""The kernel model: what the front end knows of a source file.

Functions keep their own text (after macro expansion); transformations re-parse that
text and edit it, so the model stays small and every rewrite is a pure function of text.
``line`` fields are 1-based lines in the user's file (macro expansion keeps lines).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

FunctionKind = Literal["global", "device", "host"]


@dataclass(frozen=True)
class Param:
    """One parameter: its declaration text and the name declared in it."""

    text: str
    name: str | None
    name_start: int = -1
    """Offset of ``name`` in ``text`` (-1 when unnamed)."""

    def renamed(self, new_name: str) -> str:
        if self.name is None or self.name_start < 0:
            return f"{self.text} {new_name}"
        end = self.name_start + len(self.name)
        return self.text[: self.name_start] + new_name + self.text[end:]


@dataclass(frozen=True)
class Function:
    """A function definition at file scope: a ``__global__`` kernel or a helper."""

    name: str
    kind: FunctionKind
    file: Path
    line: int
    text: str
    """The whole definition, template header included."""
    params: tuple[Param, ...]
    template_header: str = ""
    """``template <typename T, int N>`` or empty."""
    template_params: tuple[str, ...] = ()
    launch_bounds: tuple[int, ...] | None = None
    extern_c: bool = False

    @property
    def is_template(self) -> bool:
        return bool(self.template_header)


@dataclass(frozen=True)
class TopLevelItem:
    """One file-scope construct, kept as text."""

    kind: Literal["include", "function", "declaration", "other"]
    text: str
    names: tuple[str, ...]
    file: Path
    line: int
    function: Function | None = None


@dataclass(frozen=True)
class ExternSharedArray:
    """A file-scope ``extern __shared__ T name[];`` (dynamic shared memory)."""

    name: str
    element_type: str


@dataclass
class SourceFile:
    path: Path
    text: str
    """The macro-expanded text."""
    items: list[TopLevelItem] = field(default_factory=list)

    @property
    def functions(self) -> list[Function]:
        return [i.function for i in self.items if i.function is not None]

    @property
    def kernels(self) -> dict[str, Function]:
        return {f.name: f for f in self.functions if f.kind == "global"}
