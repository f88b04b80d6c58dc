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

from ..frontend.constant import evaluate
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


_SIZES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4, "uint32_t": 4, "half2": 4, "__half2": 4,
    "__nv_bfloat162": 4,
    "long long": 8, "unsigned long long": 8, "double": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "float2": 8,
    "int2": 8, "uint2": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "float3": 12, "int3": 12, "uint3": 12,
}
"""Bytes of the element types a static shared array's size is read for (others: unknown)."""


def static_shared_bytes(text: str, constants: dict[str, int] | None = None) -> int | None:
    """The static shared memory a definition declares (each variable rounded up to its
    16-byte alignment), or None when a type or an extent is not known here."""
    definition = Definition(text)
    data = definition.data
    total = 0
    for node in walk(definition.root):
        if _shared_keyword(node, data) is None:
            continue
        kind = node.child_by_field_name("type")
        if kind is None:
            return None
        words = [data[c.start_byte:c.end_byte].decode() for c in node.children if c.type == "type_qualifier"
                 and data[c.start_byte:c.end_byte] in (b"unsigned", b"signed")]
        size = _SIZES.get(" ".join([*words, data[kind.start_byte:kind.end_byte].decode()]).strip())
        if size is None:
            return None
        for declarator in node.children_by_field_name("declarator"):
            count = 1
            while declarator is not None and declarator.type in ("array_declarator", "init_declarator"):
                if declarator.type == "array_declarator":
                    extent = declarator.child_by_field_name("size")
                    value = evaluate(data[extent.start_byte:extent.end_byte].decode(), constants) if extent else None
                    if value is None:
                        return None
                    count *= value
                declarator = declarator.child_by_field_name("declarator")
            if declarator is None or declarator.type not in ("identifier",):
                return None
            total += -(-size * count // SHARED_ALIGNMENT) * SHARED_ALIGNMENT
    return total
