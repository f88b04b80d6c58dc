"""ContextTypeRewrite: structs whose member functions read the block get a per-part copy.

The classic case is the ``SharedMemory<T>`` wrapper of the CUDA samples::

    template <class T> struct SharedMemory {
      __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
    };
    ...  T *sdata = SharedMemory<T>();

A member function cannot take the part's context as a parameter (conversion operators
take none, and calls to it are implicit), so the *object* carries it: part ``i`` gets
``SharedMemory__hf<i>`` with a ``const hfuse_ctx& hf_ctx`` member set by its only
constructor, and every object of the type in that part's code is constructed with the
part's context. Member bodies are rewritten like any other part code, so they see the
part's own slice of dynamic shared memory, thread index and barrier.

Supported: default construction (``S<T> s;``, ``S<T>()``, ``S<T>{}``, ``S<T> s = S<T>();``),
pointers and references to the type. Refused with a clear error: user-declared
constructors, static member functions that need the context, arrays of the type, and
aggregate initialisation with values.
"""
from __future__ import annotations

import re
from typing import Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.model import Function, Scope, TopLevelItem
from ..frontend.parse import compact, line_of, parse, walk
from ..frontend.resolve import LocalNames
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit, apply_edits

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _names_type(node: ts.Node, ctx: PartContext, scope: Scope, local: LocalNames) -> bool:
    if node.type not in ("identifier", "type_identifier"):
        return False
    text = node.text.decode()
    if text not in ctx.context_type_names:
        return False
    parent = node.parent
    written = text
    if parent is not None and parent.type == "qualified_identifier" and parent.child_by_field_name("name") == node:
        written = compact(parent.text.decode())
    return ctx.resolver.resolve(scope, written, local) in ctx.context_types


def _constructed_type(node: ts.Node) -> ts.Node | None:
    """The identifier a call-style construction names: ``S()``, ``S<T>()``, ``ns::S<T>()``."""
    fn = node.child_by_field_name("function")
    while fn is not None and fn.type in ("qualified_identifier", "template_function"):
        fn = fn.child_by_field_name("name")
    return fn if fn is not None and fn.type == "identifier" else None


def context_type_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    """Rename the part's context types to its copies and construct every object with the context."""
    if not ctx.context_types:
        return []
    root, scope, local = definition.root, definition.scope, definition.local
    file, line_base = str(definition.file), definition.line_base
    edits: list[TextEdit] = []

    def refuse(node: ts.Node, why: str) -> HFuseError:
        return HFuseError(why, Location(file, line_base + line_of(node), ctx.kernel),
                          hint="construct the object with no arguments (S<T> s; or S<T>()), or keep this kernel unfused")

    for node in walk(root):
        if _names_type(node, ctx, scope, local):
            edits.append(TextEdit.replace(node, ctx.clone_name(node.text.decode())))
        elif node.type == "call_expression":
            named = _constructed_type(node)
            if named is None or not _names_type(named, ctx, scope, local):
                continue
            args = node.child_by_field_name("arguments")
            if args.named_children:
                raise refuse(node, f"'{named.text.decode()}' is constructed with arguments; hfuse gives each part's "
                             "copy of this type only a context-taking constructor")
            edits.append(TextEdit(args.start_byte + 1, args.end_byte - 1, CTX))
        elif node.type in ("declaration", "field_declaration"):
            type_node = node.child_by_field_name("type")
            if type_node is None or not any(_names_type(n, ctx, scope, local) for n in walk(type_node)):
                continue
            for declarator in node.children_by_field_name("declarator"):
                edits.extend(_declarator_edits(declarator, refuse))
    return edits


def _declarator_edits(declarator: ts.Node, refuse) -> list[TextEdit]:
    if declarator.type == "identifier":
        return [TextEdit(declarator.end_byte, declarator.end_byte, f"({CTX})")]
    if declarator.type in ("pointer_declarator", "reference_declarator", "function_declarator"):
        return []
    if declarator.type == "init_declarator":
        value = declarator.child_by_field_name("value")
        if value is not None and value.type == "initializer_list":
            if value.named_children:
                raise refuse(declarator, "an object of this type is initialised with values; hfuse's per-part "
                             "copy of the type takes only the part's context")
            return [TextEdit(value.start_byte + 1, value.end_byte - 1, CTX)]
        if value is not None and value.type == "argument_list":
            if value.named_children:
                raise refuse(declarator, "an object of this type is constructed with arguments")
            return [TextEdit(value.start_byte + 1, value.end_byte - 1, CTX)]
        return []  # '= S<T>()' is constructed by the call rewrite; '= other' copies
    raise refuse(declarator, "arrays of this type cannot be given the part's context")


def check_context_type(item: TopLevelItem, needs_context: set[str], kernel: str) -> None:
    """Refuse the shapes of a context type this rewrite does not handle."""
    plain = item.names[0].split("<")[0] if item.names else ""
    for member in item.members:
        if member.name.split("<")[0] in (plain, f"~{plain}"):
            raise HFuseError(
                f"'{plain}' declares its own constructor or destructor and a member that reads the block or its "
                "dynamic shared memory; hfuse cannot yet give such a type the part's context",
                Location(member.file, member.line, kernel),
                hint="use the wrapper through a default constructor, or read threadIdx/extern __shared__ in a free helper",
            )
        if member.key in needs_context and "static" in member.text.split("(")[0].split():
            raise HFuseError(
                f"static member '{member.name}' of '{plain}' reads the block or its dynamic shared memory; "
                "it has no object to carry the part's context",
                Location(member.file, member.line, kernel),
                hint="make it a non-static member or a free __device__ helper",
            )


def check_host_made(kernel: Function, given: Sequence[str], types: Sequence[TopLevelItem], needs_context: set[str],
                    spec_name: str) -> None:
    """Refuse a kernel parameter whose type is a context type (a functor the host made and
    passes by value, a pointer to a table of them): the part's copy of the type carries the
    part's context in a member the host's objects do not have, so the kernel could not
    take the host's bytes as they are.

    ``given``: the instance's template arguments (``U callable`` with U = ``ScaleFunctor<half>``)."""
    if not types:
        return
    arguments = kernel.complete_template_args(given) if given else ()
    pack = kernel.template_pack
    bound: dict[str, str] = {}
    for j, param in enumerate(kernel.template_params):
        if param == pack:
            bound[param] = ", ".join(arguments[j:])
        elif j < len(arguments):
            bound[param] = arguments[j]
    names = {item.names[0].split("<")[0].split("::")[-1]: item for item in types if item.names}
    for param in kernel.params:
        head = param.declaration[: param.name_start] if param.name_start >= 0 else param.declaration
        written = " ".join([head, *(bound[w] for w in _IDENTIFIER.findall(head) if w in bound)])
        found = next((n for n in _IDENTIFIER.findall(written) if n in names), None)
        if found is None:
            continue
        member = next((m for m in names[found].members if m.key in needs_context), None)
        reads = f" ({member.name}, line {member.line})" if member is not None else ""
        raise HFuseError(
            f"parameter '{param.name or param.text}' is a '{found}' the host made, and '{found}' has a member "
            f"function that reads the block{reads}: each part's copy of such a type carries the part's view of the "
            "block in a member the host's object does not have",
            Location(kernel.file, kernel.line, spec_name),
            hint="read threadIdx/blockIdx in the kernel and pass what the member needs as arguments, or keep this "
            "kernel unfused",
        )


def type_copy(text: str, ctx: PartContext) -> str:
    """Insert the context member and constructor right after the type's opening brace.

    ``text`` is the type's definition with its names already renamed to the part's copy.
    Each struct/class body of the definition (one per definition; explicit
    specialisations are separate items) gets them.
    """
    data = text.encode()
    root = parse(data).root_node
    edits = []
    for node in walk(root):
        if node.type in ("struct_specifier", "class_specifier"):
            body, name = node.child_by_field_name("body"), node.child_by_field_name("name")
            if body is None or name is None:
                continue
            plain = name.text.decode().split("<")[0].strip()
            access = "public:\n  " if node.type == "class_specifier" else ""
            member = (f"\n  {access}const hfuse_ctx& {CTX};  // hfuse: this part's view of the block\n"
                      f"  __device__ explicit {plain}(const hfuse_ctx& hf_part_ctx) : {CTX}(hf_part_ctx) {{}}\n")
            edits.append(TextEdit(body.start_byte + 1, body.start_byte + 1, member))
            break
    return apply_edits(data, edits)
