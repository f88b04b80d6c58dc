"""HostMembersRewrite: a class's ``__host__``-only members are kept from NVRTC.

A type the kernels use is emitted whole, host members too: FlashInfer's ``uint_fastdiv``
computes its magic numbers in a ``__host__`` constructor, ``paged_kv_t`` is built on the host.
nvcc compiles them as the user's build does; NVRTC, which ``hfuse tune`` uses, compiles no
host function ("A function explicitly marked as a __host__ function is not allowed in JIT
mode"). Device code cannot call them (nvcc refuses that too), so each such member goes under
``#ifndef __CUDACC_RTC__``: the same code for nvcc, none of it for NVRTC. A ``constexpr``
one, which device code may call under ``--expt-relaxed-constexpr``, is declared ``__host__
__device__`` instead, as hfuse declares a free one (``codegen/emit._usable_on_device``).
"""
from __future__ import annotations

from typing import Iterator

from ..frontend.parse import walk
from .definition import Definition
from .edits import TextEdit, apply_edits

_SPACES = {"__device__", "__global__"}
GUARD = "#ifndef __CUDACC_RTC__  // host code: NVRTC compiles none\n"


def _host_members(definition: Definition) -> Iterator[tuple[object, bool]]:
    """Each class member declared ``__host__`` only, and whether it is ``constexpr``."""
    for node in walk(definition.root):
        if node.type not in ("function_definition", "field_declaration") or not _in_class(node):
            continue
        words = {c.type for c in node.children} | {c.text.decode() for c in node.children if c.type == "type_qualifier"}
        if "__host__" in words and not words & _SPACES:
            yield node, "constexpr" in words


def host_member_edits(definition: Definition) -> list[TextEdit]:
    edits = []
    data = definition.data
    for node, constexpr in _host_members(definition):
        if constexpr:
            host = next(c for c in node.children if c.type == "__host__")
            edits.append(TextEdit(host.end_byte, host.end_byte, " __device__"))
            continue
        target = node.parent if node.parent.type == "template_declaration" else node
        line_start = data.rfind(b"\n", 0, target.start_byte) + 1
        if data[line_start:target.start_byte].strip():
            continue  # (another declaration shares its line: left as it is)
        edits.append(TextEdit(line_start, line_start, GUARD))
        edits.append(TextEdit(target.end_byte, target.end_byte, "\n#endif"))
    return edits


def host_only_members(text: str) -> set[tuple[str, str]]:
    """(class, member) of each member ``without_host_members`` keeps from NVRTC in ``text``:
    a definition of it outside the class must be kept from NVRTC too."""
    if "__host__" not in text:
        return set()
    found = set()
    for node, constexpr in _host_members(Definition(text)):
        declarator = next((c for c in node.children if c.type == "function_declarator"), None)
        name = declarator.child_by_field_name("declarator") if declarator is not None else None
        owner = node.parent
        while owner is not None and owner.type not in ("struct_specifier", "class_specifier"):
            owner = owner.parent
        owner_name = owner.child_by_field_name("name") if owner is not None else None
        if not constexpr and name is not None and owner_name is not None:
            found.add((owner_name.text.decode(), name.text.decode()))
    return found


def _in_class(node) -> bool:
    parent = node.parent
    if parent is not None and parent.type == "template_declaration":
        parent = parent.parent
    return parent is not None and parent.type == "field_declaration_list"


def without_host_members(text: str) -> str:
    """``text`` (any definition) with its classes' ``__host__``-only members kept from NVRTC."""
    if "__host__" not in text:
        return text
    definition = Definition(text)
    return apply_edits(definition.data, host_member_edits(definition))
