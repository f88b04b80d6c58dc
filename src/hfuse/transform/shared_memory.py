"""DynamicSharedRewrite: each part's ``extern __shared__`` array starts at its own offset.

All ``extern __shared__`` arrays of a block alias the start of dynamic shared memory, so
two fused kernels would overwrite each other. The fused launch allocates the sum of the
parts' sizes and each part's arrays point at its slice, which starts where the part's
arrays need (``slice_alignment``: 16 bytes, or what ``__align__``/``alignas`` or a 32-byte
vector type asks; TMA and ``ldmatrix`` code asks 128 or 1024).
"""
from __future__ import annotations

import re
from typing import Iterable

import tree_sitter as ts

from ..frontend.constant import evaluate

from ..frontend.parse import declarator_name, walk
from .cuda_syntax import is_extern_shared_declaration
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit

_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\b([^;]*);")
_ALIGNED = re.compile(r"\b(?:__align__|alignas|aligned)\s*\(((?:[^()]|\([^()]*\))*)\)")
_WIDE_VECTORS = re.compile(r"\b(double4|long4|ulong4|longlong4|ulonglong4)\b")
UNKNOWN_ALIGNMENT = 1024
"""An alignment written as an expression hfuse cannot evaluate: the largest any shared
memory layout asks for (TMA's 128-byte swizzle)."""


_ASYNC_PROXY = re.compile(r"cp\.(?:reduce\.)?async\.bulk|cp_async_bulk|\bwgmma|tensormap|CUtensorMap|\bcute::|\bcutlass::")
"""Code that hands shared memory to TMA or ``wgmma`` (inline PTX, libcu++'s or CUTLASS's
wrappers): swizzled layouts there are computed from the address bits, so such a kernel
relies on its dynamic shared memory starting where a launch of its own puts it (at offset
0 of the block's window, aligned for the 128-byte swizzle's 1024 bytes) even where its
``extern __shared__`` array says nothing of alignment (CUTLASS casts an unaligned
``char smem[]`` to an ``alignas(1024)`` storage struct)."""


def slice_alignment(texts: Iterable[str]) -> int:
    """The alignment a part's slice of dynamic shared memory needs, from the ``extern
    __shared__`` declarations in ``texts`` (its functions, file-scope arrays): at least 16;
    1024 where the code hands shared memory to TMA or ``wgmma`` (``_ASYNC_PROXY``)."""
    texts = list(texts)
    alignment = UNKNOWN_ALIGNMENT if any(_ASYNC_PROXY.search(t) for t in texts) else 16
    for text in texts:
        for declared in _EXTERN_SHARED.finditer(text):
            for written in _ALIGNED.findall(declared.group(1)):
                value = evaluate(written)
                alignment = max(alignment, value if value is not None and value > 0 else UNKNOWN_ALIGNMENT)
            if _WIDE_VECTORS.search(declared.group(1)):
                alignment = max(alignment, 32)
    return alignment


_DROPPED = ("storage_class_specifier", "attribute_specifier", "attribute_declaration")


def shared_memory_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    root = definition.root
    edits: list[TextEdit] = []
    declared: set[str] = set()
    for node in walk(root):
        if is_extern_shared_declaration(node):
            edits.append(TextEdit.replace(node, _slice_declarations(node)))
            declared |= {n.text.decode() for d in node.children_by_field_name("declarator") if (n := declarator_name(d))}
    file_scope = dict(ctx.extern_shared)
    for node in walk(root):
        name = node.text.decode() if node.type == "identifier" else None
        if name in file_scope and name not in declared:  # the array itself, as the name was (see below)
            edits.append(TextEdit.replace(node, f"(*reinterpret_cast<{file_scope[name]} (*)[]>({CTX}.dyn_smem))"))
    return edits


def _slice_declarations(node: ts.Node) -> str:
    # (an alignment, ``alignas(8) extern __shared__ char s[]``, is the slice's: ``slice_alignment``)
    type_words = [
        c.text.decode()
        for c in node.named_children
        if c.type not in _DROPPED and c.text.decode() != "__shared__" and c not in node.children_by_field_name("declarator")
        and not (c.type == "type_qualifier" and c.named_children and c.named_children[0].type == "alignas_qualifier")
    ]
    element = " ".join(type_words)
    lines = []
    for declarator in node.children_by_field_name("declarator"):
        # a reference to the part's slice as the array it was (``float (&s)[] = ...``), not a
        # pointer: ``reinterpret_cast<Storage&>(s)`` and ``&s`` name the shared memory, as they
        # did, and not a pointer variable of the thread's
        name = declarator_name(declarator)
        written = declarator.text.decode()
        at = name.start_byte - declarator.start_byte
        before, after = written[:at], written[at + len(name.text):]
        lines.append(f"{element} {before}(&{name.text.decode()}){after} = "
                     f"*reinterpret_cast<{element} {before}(*){after}>({CTX}.dyn_smem);")
    return " ".join(lines)
