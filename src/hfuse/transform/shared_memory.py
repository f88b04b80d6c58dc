"""DynamicSharedRewrite: each part's ``extern __shared__`` array starts at its own offset.

All ``extern __shared__`` arrays of a block alias the start of dynamic shared memory, so
two fused kernels would overwrite each other. The fused launch allocates the sum of the
parts' sizes (each aligned to 16 bytes) and each part's arrays point at its slice.
"""
from __future__ import annotations

import tree_sitter as ts

from ..frontend.extract import declarator_name
from ..frontend.parse import walk
from .analysis import is_extern_shared_declaration
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit

_DROPPED = ("storage_class_specifier", "attribute_specifier", "attribute_declaration")


def shared_memory_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    root = definition.root
    edits: list[TextEdit] = []
    declared: set[str] = set()
    for node in walk(root):
        if is_extern_shared_declaration(node):
            edits.append(TextEdit.replace(node, _pointer_declarations(node)))
            declared |= {n.text.decode() for d in node.children_by_field_name("declarator") if (n := declarator_name(d))}
    file_scope = dict(ctx.extern_shared)
    for node in walk(root):
        name = node.text.decode() if node.type == "identifier" else None
        if name in file_scope and name not in declared:
            edits.append(TextEdit.replace(node, f"reinterpret_cast<{file_scope[name]}*>({CTX}.dyn_smem)"))
    return edits


def _pointer_declarations(node: ts.Node) -> str:
    type_words = [
        c.text.decode()
        for c in node.named_children
        if c.type not in _DROPPED and c.text.decode() != "__shared__" and c not in node.children_by_field_name("declarator")
    ]
    element = " ".join(type_words)
    lines = []
    for declarator in node.children_by_field_name("declarator"):
        name = declarator_name(declarator).text.decode()
        lines.append(f"{element}* const {name} = reinterpret_cast<{element}*>({CTX}.dyn_smem);")
    return " ".join(lines)
