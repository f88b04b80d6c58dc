"""What Clang answers for a request, as values (``frontend/clang.py`` asks): for each of the
user's functions, the kept headers' declarations it reaches and what their code reads of the
block; or why there is no answer."""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class HeaderUse:
    """One reference from a user's function to a declaration of a kept header."""

    qualified: str
    """``cub::BlockReduce::Sum`` (inline namespaces such as CUB's versioned one dropped)."""
    line: int
    """Line in the user's file where the reference is written."""
    reads: tuple[str, ...] = ()
    """What the declaration's code reads of the block (``reads threadIdx``, ``synchronises
    the block``), found by walking its definition; empty for what reads nothing."""
    unknown: bool = False
    """The walk stopped at its limit: what it reads is not known."""
    file: str = ""
    """The header that declares it (its real path); empty for one of the candidates of a name
    a template leaves unresolved, which may not be the one that runs."""
    through: str = ""
    """The template type parameter a call in a template read as written goes through (``F``
    of ``f(x)``, ``f.apply(x)`` or ``F::apply(x)``, ``f`` an ``F``): what runs is the code of
    whatever type an instance gives it, unknown here (``qualified`` is the parameter too)."""


@dataclass(frozen=True)
class FunctionMeaning:
    """What Clang found in one function the user defines."""

    file: Path
    name: str
    first_line: int
    last_line: int
    uses: tuple[HeaderUse, ...]


@dataclass(frozen=True)
class Meaning:
    """Clang's answers for one request (or why there are none)."""

    functions: tuple[FunctionMeaning, ...] = ()
    unavailable: str | None = None
    """Why Clang gave no answer (not installed, or the file did not parse); None when it did."""
    dialect: str | None = None
    """The later ``-std`` a header's ``#error`` asks for (PyTorch's ``C++20 or later ... is
    required``), where that was why: nvcc, given the same flags, stops at it too."""
    dialect_where: str = ""
    """``file:line: message`` of that ``#error``."""
    instances_unread: str | None = None
    """Why the kernel template instances written as ordinary code did not compile (the
    templates were read as such, where calls through dependent types name nothing)."""
    _index: dict[tuple[str, str], list[FunctionMeaning]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in self.functions:
            self._index.setdefault((_key(f.file), f.name), []).append(f)

    @property
    def header_files(self) -> frozenset[str]:
        """The kept headers whose declarations the user's device code uses (real paths)."""
        return frozenset(u.file for f in self.functions for u in f.uses if u.file)

    def function(self, file: Path, name: str, line: int) -> FunctionMeaning | None:
        """The function named ``name`` defined in ``file`` whose text spans ``line``."""
        for found in self._index.get((_key(file), name), []):
            if found.first_line <= line <= found.last_line:
                return found
        return None


_DIALECT = re.compile(r"\bC\+\+\s?(11|14|17|20|23)\b")
_DEMANDS = re.compile(r"requir|or later|or newer|or above|or higher|at least|support", re.IGNORECASE)


def required_dialect(message: str, std: str) -> str | None:
    """``c++NN`` when ``message`` (a diagnostic) asks for a C++ standard later than ``std``."""
    found = _DIALECT.search(message)
    if found is None or not _DEMANDS.search(message):
        return None
    wanted = f"c++{found.group(1)}"
    return wanted if wanted > std else None  # (c++11 < c++14 < c++17 < c++20 < c++23 as text too)


def _key(path: Path) -> str:
    return _real(str(path))


@functools.lru_cache(maxsize=4096)
def _real(path: str) -> str:
    """(A unit's files are asked about thousands of times: FlashInfer's norm file, 15,000.)"""
    return os.path.realpath(path)
