"""What a class body declares, read for the part's copy of a type that reads the block
(``context_types``): its data members, its own constructors, whether it is an aggregate,
and the constructors its copy needs so that every object carries the part's view of the
block (``S op(hf_ctx, s)``, ``WarpTile t{hf_ctx, smem}``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import tree_sitter as ts

from ..frontend.model import Function, TopLevelItem
from ..frontend.parse import compact, parse, walk
from .aliases import MEMBER_ALIAS
from .context import CTX
from .edits import TextEdit


def user_constructors(item: TopLevelItem) -> list[Function]:
    """The type's user-declared constructors (not ``= default``/``= delete`` ones)."""
    plain = item.names[0].split("<")[0].split("::")[-1] if item.names else ""
    return [m for m in item.members if m.name.split("<")[0].split("::")[-1] == plain
            and not re.search(r"=\s*(?:default|delete)\s*;?\s*$", m.text)]


def is_copy_constructor(member: Function, plain: str) -> bool:
    """A copy or move constructor: one parameter, a reference to the type."""
    plain = plain.split("::")[-1]
    return len(member.params) == 1 and re.search(rf"\b{re.escape(plain)}\b[^,]*&", member.params[0].text) is not None


def constructed_types(types: Sequence[TopLevelItem]) -> frozenset[str]:
    """Keys of the context types that declare a constructor taking arguments (not a copy),
    and of the aggregates whose copies get one per number of values (``value_constructors``)."""
    return frozenset(key for item in types
                     if any(m.params and not is_copy_constructor(m, item.names[0].split("<")[0]) for m in user_constructors(item))
                     or aggregate_fields(item.text) is not None for key in item.keys)


def aggregate_fields(text: str) -> list[tuple[str, bool]] | None:
    """The data members, in order, of the aggregate ``text`` defines, each with whether it
    has a default member initialiser; None where it is no aggregate a constructor can stand
    in for (it declares constructors, has bases, arrays, references, const or bit-field members)."""
    found = struct_body(text)
    if found is None or any(c.type == "base_class_clause" for c in found[0].children) or data_members(found[1])[1]:
        return None
    node, body = found
    plain = re.sub(r"<.*", "", node.child_by_field_name("name").text.decode(), flags=re.S).strip()
    if any(n.type == "function_declarator" and (d := n.child_by_field_name("declarator")) is not None
           and d.type == "identifier" and d.text.decode() == plain for n in walk(body)):
        return None  # (a constructor of its own: the user's constructors are given the view instead)
    fields = _declared_members(body)
    if any(member.kind not in ("field_identifier", "pointer_declarator") for member in fields):
        return None  # (an array cannot be a constructor's parameter)
    return [(member.name, member.has_default) for member in fields] or None


@dataclass(frozen=True)
class _Member:
    name: str
    has_default: bool
    """It has a default member initialiser (``int ld = 33;``, ``int k{2};``)."""
    kind: str
    """Its declarator's kind (``field_identifier``, ``pointer_declarator``, ``array_declarator``, ...)."""
    type_names: frozenset[str]
    """The type names its declaration is written with."""

    def initialiser(self, copies: frozenset[str]) -> str:
        """How a constructor of a part's copy that is given no value for it initialises it:
        with the part's view where its type is a part's copy of a type, else value-initialised."""
        return f"{self.name}(hf_part_ctx)" if self.type_names & copies else f"{self.name}()"


def _declared_members(body: ts.Node) -> list[_Member]:
    """The non-static data members a class body declares, in order."""
    fields: list[_Member] = []
    for node in body.named_children:
        if node.type != "field_declaration" or is_member_function(node) or any(
                c.type == "storage_class_specifier" and c.text == b"static" for c in node.children):
            continue
        for i, child in enumerate(node.children):
            if node.field_name_for_child(i) != "declarator":
                continue
            after = [node.field_name_for_child(j) for j in range(i + 1, node.child_count)]
            ends = after.index("declarator") if "declarator" in after else len(after)
            name = next((n.text.decode() for n in walk(child) if n.type == "field_identifier"), None)
            written = node.child_by_field_name("type")
            types = frozenset(n.text.decode() for n in walk(written) if n.type == "type_identifier") if written else frozenset()
            if name is not None:  # (``int ld = 33, pad;``: ld's initialiser, not pad's)
                fields.append(_Member(name, "default_value" in after[:ends], child.type, types))
    return fields


def member_initialisers(body: ts.Node, copies: frozenset[str]) -> str:
    """What the context-taking constructor of a part's copy (``copies``: the names of the
    part's copies of types) initialises besides the view: a member whose type is such a copy
    with the part's view; one without a default member initialiser value-initialised
    (references aside). ``S{}``, ``S()`` and ``S s{}`` of a type without constructors of its
    own value-initialise those (zeros), and the copy's constructor is its own, which would
    leave them indeterminate. (For ``S s;``, which left them indeterminate, zero is one of
    the values C++ allowed.)"""
    return "".join(f", {m.initialiser(copies)}" for m in _declared_members(body)
                   if m.type_names & copies or not m.has_default and m.kind != "reference_declarator")


def _views(body: ts.Node, copies: frozenset[str], written: str) -> str:
    """The members whose type is a part's copy of a type and that ``written`` (a user's
    member initialiser list) does not initialise: each given the part's view."""
    return "".join(f", {m.name}(hf_part_ctx)" for m in _declared_members(body) if m.type_names & copies
                   and not re.search(rf"(?<![\w.]){re.escape(m.name)}\s*[({{]", written))


def _given_views(listed: ts.Node | None, body: ts.Node, copies: frozenset[str]) -> list[TextEdit]:
    """The part's view given first to the members whose type is a part's copy of a type that
    the user's initialiser list ``listed`` makes with values (``reducer_(params, lane)``:
    ``reducer_(hf_part_ctx, params, lane)``, as the copy's constructors take it)."""
    viewed = {m.name for m in _declared_members(body) if m.type_names & copies}
    edits = []
    for node in listed.named_children if listed is not None else ():
        name = next((c for c in node.named_children if c.type == "field_identifier"), None)
        values = node.named_children[-1] if node.named_children else None
        if node.type == "field_initializer" and name is not None and name.text.decode() in viewed \
                and values is not None and values.type in ("argument_list", "initializer_list"):
            given = "hf_part_ctx" + (", " if values.named_children else "")
            edits.append(TextEdit(values.start_byte + 1, values.start_byte + 1, given))
    return edits


def _made_bases(listed: ts.Node | None, body: ts.Node, bases: Sequence[str]) -> tuple[set[str], list[TextEdit]]:
    """Of ``bases`` (part's copies, as written), those the user's initialiser list ``listed``
    makes itself, by name or by a member alias of the class (TE's ``using Base = Reducer<T, 1,
    WARPS_M, 1>;`` then ``Base(params, ...)``), and the edits giving each the part's view first."""
    if listed is None or not bases:
        return set(), []
    names = {compact(b): b for b in bases}
    for m in MEMBER_ALIAS.finditer(body.text.decode()):
        alias, aliased = m.group(1) or m.group(4), compact(m.group(2) or m.group(3)).removeprefix("typename")
        if aliased.removeprefix("::") in names:
            names[alias] = names[aliased.removeprefix("::")]
    made, edits = set(), []
    for node in listed.named_children:
        values = node.named_children[-1] if node.named_children else None
        if node.type != "field_initializer" or values is None or values.type not in ("argument_list",
                                                                                       "initializer_list"):
            continue
        base = names.get(compact(node.text[:values.start_byte - node.start_byte].decode()).removeprefix("::"))
        if base is not None:
            made.add(base)
            edits.append(TextEdit(values.start_byte + 1, values.start_byte + 1,
                                  "hf_part_ctx" + (", " if values.named_children else "")))
    return made, edits


def struct_body(text: str) -> tuple[ts.Node, ts.Node] | None:
    """The first struct/class specifier of ``text`` that has a body, and its body."""
    for node in walk(parse(text.encode()).root_node):
        if node.type in ("struct_specifier", "class_specifier") and node.child_by_field_name("body") is not None:
            return node, node.child_by_field_name("body")
    return None


def is_member_function(node: ts.Node) -> bool:
    if node.type in ("function_definition", "friend_declaration"):
        return True
    if node.type == "template_declaration":
        return any(is_member_function(c) for c in node.named_children)
    if node.type in ("field_declaration", "declaration"):
        for declarator in node.children_by_field_name("declarator"):
            while declarator is not None and declarator.type in ("pointer_declarator", "reference_declarator"):
                declarator = declarator.child_by_field_name("declarator") or next(
                    (c for c in declarator.named_children if c.type.endswith("declarator")), None)
            if declarator is not None and declarator.type == "function_declarator":
                return True
    return False


def data_members(body: ts.Node) -> tuple[list[str], str | None]:
    """The non-static data members of a struct body, in order, and why the body cannot be
    copied member by member from the host's object (None: it can)."""
    names: list[str] = []
    for node in body.named_children:
        if node.type != "field_declaration" or is_member_function(node):
            continue
        words = [c.text.decode() for c in node.children if c.type in ("storage_class_specifier", "type_qualifier",
                                                                    "virtual")]
        if "static" in words:
            continue
        declarators = node.children_by_field_name("declarator")
        if "const" in words and not all(d.type == "pointer_declarator" for d in declarators):
            return names, "it has a const data member"
        if any(c.type == "bitfield_clause" for c in node.children) or not declarators:
            return names, "it has a bit-field or an unnamed member"
        for declarator in declarators:
            inner = declarator
            while inner.type in ("array_declarator", "init_declarator", "pointer_declarator"):
                if inner.type == "pointer_declarator" and any(c.type == "type_qualifier" for c in inner.children):
                    return names, "it has a const data member"
                inner = inner.child_by_field_name("declarator")
            if inner is None or inner.type != "field_identifier":
                return names, "it has a reference member or a member hfuse cannot name"
            names.append(inner.text.decode())
    return names, None


def value_constructors(text: str, plain: str, initialiser: str, copies: frozenset[str] = frozenset()) -> str:
    """For an aggregate's copy (no longer an aggregate: it has a constructor), one
    constructor per number of values an initialiser may give, so that ``S s{p, 33}``
    (``S s{hf_ctx, p, 33}`` in the part) sets the members as aggregate initialisation did:
    those given in order, the rest from their default member initialisers or value-initialised."""
    found = struct_body(text)
    if not aggregate_fields(text) or found is None:
        return ""
    fields = _declared_members(found[1])
    lines = ["  // hfuse: what initialisation with values did to this aggregate, with the part's view first"]
    for given in range(1, len(fields) + 1):
        params = ", ".join(f"decltype({m.name}) hf_v{j}" for j, m in enumerate(fields[:given]))
        inits = [f"{m.name}(hf_v{j})" for j, m in enumerate(fields[:given])]
        inits += [m.initialiser(copies) for m in fields[given:] if m.type_names & copies or not m.has_default]
        lines.append(f"  __device__ {plain}(const hfuse_ctx& hf_part_ctx, {params}) : {initialiser}, "
                     f"{', '.join(inits)} {{}}")
    return "\n" + "\n".join(lines) + "\n"


def constructor_edits(body: ts.Node, plain: str, initialiser: str,
                      copies: frozenset[str] = frozenset(), bases: Sequence[str] = ()) -> tuple[list[TextEdit], bool]:
    """The user's constructors in ``body`` taking the part's context first and setting the
    context member with ``initialiser`` (a copy constructor: from the object it copies), and
    members whose type is a part's copy (``copies``) that they leave out with the view too;
    and whether the copy needs a constructor that takes the view alone: where the type could
    be made with no arguments (no constructor of the user's, or ``S() = default;``) and no
    constructor of the user's takes none (that one takes the view now). A type with
    constructors of its own has no implicit default one, and a reference member would make
    such a constructor ill-formed. ``bases``: the bases that are part's copies too (as written):
    a constructor that makes one with values (``Base(params, lane)``, by its name or a member
    alias of it) gives it the view first, the others are made with the view alone."""
    edits: list[TextEdit] = []
    takes_none = declared = False
    for node in body.named_children:
        definition = next((c for c in node.named_children if c.type == "function_definition"), None) \
            if node.type == "template_declaration" else node
        if definition is None or definition.type != "function_definition":
            continue
        declarator = definition.child_by_field_name("declarator")
        named = declarator.child_by_field_name("declarator") if declarator is not None else None
        statement = definition.child_by_field_name("body")
        if named is None or named.type != "identifier" or named.text.decode() != plain or statement is None:
            continue  # (not a constructor, or ``= default``: that one is the compiler's)
        declared = True
        params = declarator.child_by_field_name("parameters")
        given = [p for p in params.named_children if p.type.endswith("parameter_declaration")]
        copied = len(given) == 1 and re.search(rf"\b{re.escape(plain)}\b[^,]*&", given[0].text.decode())
        if copied:
            name = next((n.text.decode() for n in walk(given[0]) if n.type == "identifier"), "")
            init = f"{CTX}({name}.{CTX})"
        else:
            edits.append(TextEdit(params.start_byte + 1, params.start_byte + 1,
                                  "const hfuse_ctx& hf_part_ctx" + (", " if given else "")))
            listed = next((c for c in definition.named_children if c.type == "field_initializer_list"), None)
            made, given_bases = _made_bases(listed, body, bases)
            init = "".join(f"{b}(hf_part_ctx), " for b in bases if b not in made) + initialiser + \
                _views(body, copies, listed.text.decode() if listed is not None else "")
            edits += _given_views(listed, body, copies) + given_bases
            # (one whose parameters all have defaults is the one ``S s;`` calls)
            takes_none = takes_none or all(p.type == "optional_parameter_declaration" for p in given)
        listed = next((c for c in definition.named_children if c.type == "field_initializer_list"), None)
        if listed is not None:
            edits.append(TextEdit(listed.children[0].end_byte, listed.children[0].end_byte, f" {init},"))
        else:
            edits.append(TextEdit(statement.start_byte, statement.start_byte, f": {init} "))
    defaulted = re.search(rf"\b{re.escape(plain)}\s*\(\s*\)\s*=\s*default\b", body.text.decode()) is not None
    return edits, not takes_none and (not declared or defaulted)
