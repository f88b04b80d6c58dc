"""CompoundLiteralRewrite: C99 compound literals become C++ list initialisation.

``len2((struct pt){a[i], 2.0f * a[i]})`` is C, which nvcc accepts in device code as an
extension of its host compiler's front end; NVRTC does not ("expected an expression"),
so a fused file holding one could not be tuned. ``pt{a[i], 2.0f * a[i]}`` builds the same
aggregate from the same initialisers in C++. The one difference is that a compound
literal is an lvalue: code taking its address (``&(struct pt){...}``) no longer compiles,
which is loud, never wrong. Types C++ cannot name in a functional cast as written
(``unsigned int``, pointers, arrays) are left as they are.
"""
from __future__ import annotations

from ..frontend.parse import walk
from .context import PartContext
from .definition import Definition
from .edits import TextEdit, apply_edits

_TAGS = ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier")


def _type_range(descriptor) -> tuple[int, int] | None:
    """The bytes of the literal's type as C++ names it in ``T{...}`` (the name of a
    ``struct`` tag), or None when a functional cast cannot name it as written."""
    if descriptor is None or descriptor.child_by_field_name("declarator") is not None:
        return None  # (float*){...}, (int[3]){...}
    kind = descriptor.child_by_field_name("type")
    if kind is None or any(c.type == "type_qualifier" for c in descriptor.children):
        return None
    if kind.type in _TAGS:
        name = kind.child_by_field_name("name")
        if name is None or kind.child_by_field_name("body") is not None:
            return None
        return name.start_byte, name.end_byte
    if kind.type in ("type_identifier", "qualified_identifier", "template_type", "primitive_type"):
        return kind.start_byte, kind.end_byte
    return None


def compound_literal_edits(definition: Definition, ctx: PartContext | None = None) -> list[TextEdit]:
    """Two deletions per literal, ``(struct `` and ``)``: the type's name itself stays for
    the other rewrites (a type each part has its own copy of is renamed there)."""
    edits = []
    for node in walk(definition.root):
        if node.type != "compound_literal_expression":
            continue
        named = _type_range(node.child_by_field_name("type"))
        value = node.child_by_field_name("value")
        if named is not None and value is not None:
            edits += [TextEdit(node.start_byte, named[0], ""), TextEdit(named[1], value.start_byte, "")]
    return edits


def without_compound_literals(text: str) -> str:
    """``text`` (any definition) with its compound literals as C++ list initialisation."""
    if "){" not in text.replace(") {", "){"):
        return text
    definition = Definition(text)
    return apply_edits(definition.data, compound_literal_edits(definition))
