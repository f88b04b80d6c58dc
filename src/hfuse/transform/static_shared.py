"""StaticSharedAlignment: every static ``__shared__`` variable starts on a 16-byte boundary.

Alone, a kernel's first static shared array sits at offset 0 of the block's shared
memory, so ``__shared__ float a[N]`` read through ``float4`` (or 16-byte async copies)
works although ``float`` asks for 4-byte alignment only. Fused, the compiler lays out
every part's static shared variables in one block, and the array may land behind
another part's variables: 8 bytes off a 16-byte boundary is a "misaligned address" on
the first vector access. Each static ``__shared__`` declaration therefore gets
``__align__(16)``, unless it already asks for 16 bytes or more (the largest alignment
a declaration asks for is the one it gets, so the attribute never lowers one).
"""
from __future__ import annotations

import re

import tree_sitter as ts

from ..frontend.parse import walk
from .context import PartContext
from .definition import Definition
from .edits import TextEdit, apply_edits

SHARED_ALIGNMENT = 16

_ALIGNMENT = re.compile(rb"(?:__align__|alignas)\s*\(\s*(\d+)\s*\)")


def _shared_keyword(node: ts.Node, data: bytes) -> ts.Node | None:
    """The ``__shared__`` token of a static (not ``extern``) shared variable declaration."""
    if node.type != "declaration":
        return None
    words = {data[c.start_byte:c.end_byte]: c for c in node.children
             if c.type in ("storage_class_specifier", "type_qualifier", "__shared__")}
    if b"extern" in words:
        return None
    return words.get(b"__shared__")


def static_shared_edits(definition: Definition, ctx: PartContext | None = None) -> list[TextEdit]:
    """``__align__(16)`` after ``__shared__`` where a declaration asks for less."""
    data = definition.data
    edits = []
    for node in walk(definition.root):
        keyword = _shared_keyword(node, data)
        if keyword is None:
            continue
        asked = [int(n) for n in _ALIGNMENT.findall(data[node.start_byte:node.end_byte])]
        if max(asked, default=0) >= SHARED_ALIGNMENT:
            continue
        edits.append(TextEdit(keyword.end_byte, keyword.end_byte, f" __align__({SHARED_ALIGNMENT})"))
    return edits


def with_aligned_shared(text: str) -> str:
    """``text`` (any definition) with its static shared variables 16-byte aligned."""
    if "__shared__" not in text:
        return text
    definition = Definition(text)
    return apply_edits(definition.data, static_shared_edits(definition))
