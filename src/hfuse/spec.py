"""What the user asks for: which kernels to fuse, with which block shapes."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from .errors import HFuseError
from .frontend.options import CompileOptions


@dataclass(frozen=True)
class Dim3:
    """A CUDA dim3: x fastest."""

    x: int
    y: int = 1
    z: int = 1

    @property
    def size(self) -> int:
        return self.x * self.y * self.z

    @property
    def rank(self) -> int:
        """How many dimensions are not 1 (at least 1)."""
        return 3 if self.z > 1 else 2 if self.y > 1 else 1

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)

    def __str__(self) -> str:
        return "x".join(str(v) for v in self.as_tuple()[: self.rank])

    @classmethod
    def of(cls, value: "Dim3 | int | str | tuple[int, ...] | list[int]") -> "Dim3":
        """Accepts 256, (32, 16), [32, 16, 1], '32x16' or a Dim3."""
        if isinstance(value, Dim3):
            return value
        if isinstance(value, int):
            return cls(value)
        if isinstance(value, str):
            if not re.fullmatch(r"\s*\d+(\s*[x,]\s*\d+){0,2}\s*", value):
                raise ValueError(f"block/grid dims '{value}' are not like 256, 32x16 or 8x8x4")
            value = [int(v) for v in re.split(r"[x,]", value)]
        values = [int(v) for v in value]
        if not 1 <= len(values) <= 3 or any(v < 1 for v in values):
            raise ValueError(f"dims {value!r} need one to three positive integers")
        return cls(*values)


@dataclass(frozen=True)
class KernelSpec:
    """One kernel to fuse: where it is, its name, its block shape.

    ``template_args`` instantiate a template kernel (C++ text of each argument, e.g.
    ``("float", "4")``). ``tunable`` says whether the tuner may change the block size
    (the paper's deep-learning kernels) or must keep it (its crypto kernels).
    ``options``: this kernel's file is preprocessed with these instead of the request's
    (two benchmark files built with ``-DBLOCK_SIZE=16`` and ``-DBLOCK_SIZE=256``).
    ``line``: the line its definition starts on, which picks one of kernels that share the
    name and differ only in their parameters (``-k 'NAME@LINE:BLOCK'``); None: by name alone.
    """

    file: Path
    name: str
    block: Dim3
    template_args: tuple[str, ...] = ()
    tunable: bool = False
    options: CompileOptions | None = None
    line: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "file", Path(self.file))
        object.__setattr__(self, "block", Dim3.of(self.block))
        object.__setattr__(self, "template_args", tuple(str(a) for a in self.template_args))
        for argument in self.template_args:
            if not _balanced(argument):
                raise HFuseError(
                    f"{self.file}, kernel '{self.name}': template argument '{argument}' has unbalanced brackets",
                    hint="give each argument whole: -k '{}<{}>:BLOCK' splits at top-level commas only".format(
                        self.name, ", ".join(a.strip() for a in self.template_args)))

    def with_block(self, block: "Dim3 | int | str | tuple[int, ...]") -> "KernelSpec":
        return replace(self, block=Dim3.of(block))

    @property
    def instance(self) -> str:
        """The C++ name of the instantiated kernel, e.g. ``hist<float, 4>``."""
        if not self.template_args:
            return self.name
        return f"{self.name}<{', '.join(self.template_args)}>"


def _balanced(text: str) -> bool:
    """Whether ``text``'s brackets pair up (``<``/``>`` counted outside ``(...)``, where they
    may be comparisons: ``(A < B)``)."""
    closing = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for c in text:
        if c in "([{" or c == "<" and "(" not in stack:
            stack.append(c)
        elif c in closing or c == ">" and "(" not in stack:
            if not stack or stack.pop() != closing.get(c, "<"):
                return False
    return not stack


def with_libraries_apart(specs: list[KernelSpec], options: CompileOptions) -> tuple[list[KernelSpec], CompileOptions]:
    """``specs`` and the request's ``options``, each with the ``-I`` folders that hold another
    project's headers than the kernels' files marked as libraries (``CompileOptions.for_inputs``)."""
    inputs = list(dict.fromkeys(s.file for s in specs))
    return ([replace(s, options=s.options.for_inputs(inputs)) if s.options else s for s in specs],
            options.for_inputs(inputs))


@dataclass(frozen=True)
class FileOptions:
    """A build's options for one of its files (``cli/build_commands.py`` reads a compile
    database into these): a value, so a batch's request carries it to any worker."""

    file: Path
    """The real path of the file the build compiles."""
    options: CompileOptions
    notes: tuple[str, ...] = ()
    """What the build's command held that hfuse does not read."""


def with_file_options(specs: Sequence[KernelSpec], common: CompileOptions, build: Sequence[FileOptions],
                      database: str = "the compile database") -> tuple[list[KernelSpec], CompileOptions, list[str]]:
    """``specs`` each with its file's options from ``build`` (a file it lacks is read with
    ``common``), the options the fused file compiles with (what they share), and notes."""
    by_file = {entry.file: entry for entry in build}
    notes: list[str] = []
    out: list[KernelSpec] = []
    each: list[CompileOptions] = []
    for spec in specs:
        own = by_file.get(Path(spec.file).resolve())
        said = own.notes if own is not None else (
            f"note: {spec.file} is not in {database}: read with the command line's flags",)
        notes += [n for n in said if n not in notes]
        out.append(spec if own is None else replace(spec, options=own.options))
        each.append(common if own is None else own.options)
    shared, left_out = CompileOptions.shared(each)
    return out, shared, notes + [f"note: {n}" for n in left_out]
