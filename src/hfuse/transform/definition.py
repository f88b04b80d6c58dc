"""The one input of every rewrite: a definition's text, parsed once, and where it is.

Each rewrite of a fused part (built-ins, barriers, cooperative groups, shared memory,
calls, context types, symbols, ``register``, shared alignment, the signature, early
exits) is a function ``(Definition, PartContext) -> list[TextEdit]``: it reads the tree,
never changes it, and says which byte ranges of the user's text become what
(``edits.py``). The pipeline (``specialize.py``) applies them together.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import tree_sitter as ts

from ..frontend.model import Scope
from ..frontend.parse import line_of, parse
from ..frontend.resolve import LocalNames, Resolver
from .cuda_syntax import cg_spellings


@dataclass(frozen=True)
class Definition:
    text: str
    scope: Scope = ()
    """The namespaces it is written in: names in it resolve from there."""
    file: Path = Path("")
    line: int = 1
    """The user's line of its first line (for errors)."""

    @cached_property
    def data(self) -> bytes:
        return self.text.encode()

    @cached_property
    def root(self) -> ts.Node:
        return parse(self.data).root_node

    @cached_property
    def local(self) -> LocalNames:
        """Using-directives and namespace aliases written inside it."""
        return LocalNames.of(self.root)

    @property
    def line_base(self) -> int:
        """Added to a 1-based line of the text, the user's line."""
        return self.line - 1

    def user_line(self, node: ts.Node) -> int:
        return self.line_base + line_of(node)

    def cg_spellings(self, resolver: Resolver | None) -> frozenset[str]:
        """Every qualifier that names cooperative groups here (aliases followed)."""
        return cg_spellings(resolver, self.scope, self.local)
