"""What the early-exit rewrite may know of the program's other functions (a value every part's context carries)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Mapping

from .cuda_syntax import CG_NAMESPACES


@dataclass(frozen=True, eq=False)
class Helpers:
    """What the rewrite may know of the program's functions.

    ``barriers``: names (qualified keys and plain names) of the functions that
    (transitively) execute a block barrier; ``texts``: the definitions of every function
    by the same names, so a helper that synchronises can be given the activity flag and
    a callee's parameters and warp operations can be checked.
    """

    barriers: frozenset[str] = frozenset()
    texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    origins: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """A definition's text -> (file, line of its first line), for messages."""
    cg: frozenset[str] = CG_NAMESPACES
    """Spellings of cooperative groups in the program (``g`` after ``namespace g = cooperative_groups;``)."""
    barrier_types: frozenset[str] = frozenset()
    """Names of the classes with a member function that (transitively) synchronises: an object
    of one, called or given to a function, may run a barrier."""
    attempts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    """Memo of one fusion request: helper text -> its flagged rewrite, and "needed" -> ``_needed``."""

    @classmethod
    def of(cls, value: "Helpers | Iterable[str]") -> "Helpers":
        return value if isinstance(value, Helpers) else cls(frozenset(value))

    @cached_property
    def key(self) -> tuple:
        return (self.barriers, tuple(sorted(self.texts.items())), tuple(sorted(self.origins.items())), self.cg,
                self.barrier_types)

    def definitions(self, name: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.texts.get(name, ())))


def program_helpers(program) -> Helpers:
    """``Helpers`` of a ``ProgramFacts`` (transform/analysis.py)."""
    texts: dict[str, tuple[str, ...]] = {}
    origins: dict[str, tuple[str, int]] = {}
    for key, facts in program.facts.items():
        defs = tuple(f.function.text for f in facts)
        for f in facts:
            origins.setdefault(f.function.text, (str(f.function.file), f.function.line))
        for name in {key, key.split("::")[-1]}:
            texts[name] = texts.get(name, ()) + defs
    barriers = {name for key in program.has_barrier for name in (key, key.split("::")[-1])}
    cg = frozenset().union(CG_NAMESPACES, *(f.cg for facts in program.facts.values() for f in facts))
    types = frozenset(f.function.owner for key in program.has_barrier for f in program.facts.get(key, ())
                      if f.function.owner)
    return Helpers(frozenset(barriers), texts, origins, cg, barrier_types=types)


def functions_of(program) -> Helpers:
    """``program_helpers(program)``, made once per ``ProgramFacts`` (it memoises the helpers'
    rewrites) and kept on it. The early exit matches calls by spelling, so a namespaced
    helper is found under its last name too (a same-named function elsewhere then counts as
    one: it can only make hfuse refuse more)."""
    if program.early_exit_helpers is None:
        program.early_exit_helpers = program_helpers(program)
    return program.early_exit_helpers
