"""HelperCallRewrite: calls to specialised helpers go to the part's own copy.

A ``__device__`` helper that reads built-ins or synchronises is copied once per part;
the copy takes the part's context as its first parameter (default arguments and ``...``
stay last), and every call in that part's code is renamed and passes the context along.
"""
from __future__ import annotations

import re

import tree_sitter as ts

from ..frontend.resolve import using_declaration
from ..frontend.parse import compact, hidden_by_local, inner_declarator, walk
from .cuda_syntax import call_reference
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit


def _name_node(call: ts.Node) -> ts.Node:
    fn = call.child_by_field_name("function")
    while fn.type in ("template_function", "qualified_identifier"):
        fn = fn.child_by_field_name("name")
    return fn


def call_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    """Calls that resolve to a specialised helper go to its copy."""
    scope, local = definition.scope, definition.local
    edits: list[TextEdit] = []
    for node in walk(definition.root):
        if node.type == "using_declaration" and (brought := using_declaration(node.text.decode())) is not None:
            # ``using d::lanes;`` in a body: the part's copy is what the body's calls name
            key = ctx.resolver.resolve(scope, brought, known=set(ctx.known)) if ctx.known else None
            name = node.named_children[-1] if node.named_children else None
            while name is not None and name.type == "qualified_identifier":
                name = name.child_by_field_name("name")
            if key in ctx.specialised and name is not None:
                edits.append(TextEdit.replace(name, ctx.clone_name(name.text.decode())))
            continue
        if node.type != "call_expression":
            continue
        reference = call_reference(node)
        target = node.child_by_field_name("function")
        if reference is None or (target.type == "identifier" and hidden_by_local(target)):
            continue  # a local lambda or functor of that name is what is called
        if (through := _through_bound_parameter(reference, definition, ctx)) is not None:
            if through in ctx.static_members:  # (``KT::run(p)``, KT bound to a type whose run reads the block)
                edits.append(_context_argument(node))
            continue
        key = ctx.resolver.resolve(scope, reference, local, set(ctx.known)) if ctx.known else reference
        member = _own_member(node, reference, scope, ctx) if "::" not in reference else None
        if member is not None or key in ctx.static_members:
            # a member of the enclosing class hides the namespace's function of that name; one
            # that is static and reads the block takes the part's context (W::lane(), lane())
            if (member or key) in ctx.static_members:
                edits.append(_context_argument(node))
            continue
        if key not in ctx.specialised or (key.rsplit("::", 1)[0] if "::" in key else None) in ctx.context_types:
            continue  # (a member, called W::lane(): the part's copy of its class has it, under its own name)
        name = _name_node(node)
        edits.append(TextEdit.replace(name, ctx.clone_name(name.text.decode())))
        edits.append(_context_argument(node))
    return edits


def _through_bound_parameter(reference: str, definition: Definition, ctx: PartContext) -> str | None:
    """The member key a call written ``P::member`` names in the kernel's own body, where the
    instance binds its template parameter ``P`` to a block-reading type (None: no such call)."""
    first, _, rest = compact(reference).partition("::")
    if not rest or (str(definition.file), definition.line) != ctx.kernel_at:
        return None
    bound = next((b for b in ctx.made_parameters if b.name == first), None)
    return f"{bound.key}::{rest.split('<')[0]}" if bound is not None else None


def _context_argument(call: ts.Node) -> TextEdit:
    """The part's context as the call's first argument."""
    args = call.child_by_field_name("arguments")
    if args.named_children:
        return TextEdit(args.start_byte + 1, args.start_byte + 1, f"{CTX}, ")
    return TextEdit(args.start_byte + 1, args.end_byte - 1, CTX)


def _own_member(call: ts.Node, reference: str, scope: tuple[str, ...], ctx: PartContext) -> str | None:
    """The member named ``reference`` of the class whose member function ``call`` is in (None: none)."""
    name = reference.split("<")[0].strip()
    current = call.parent
    while current is not None:
        owner = None
        if current.type in ("struct_specifier", "class_specifier") and (named := current.child_by_field_name("name")):
            owner = named.text.decode()
        elif current.type == "function_definition":
            owner = _class_qualifier(current, scope, ctx)  # ``int W::f() const { ... }``, defined outside W
        if owner is not None:
            plain = re.sub(r"<[^<>]*>", "", owner).strip()
            # the part's copy is renamed (S__hf2); the program knows the original's members
            original = plain.removesuffix(f"__hf{ctx.index}")
            for candidate in (plain, original):
                if (member := ctx.resolver.member(scope, candidate, name, ctx.known)[0]) is not None:
                    return member
        current = current.parent
    return None


def _class_qualifier(function: ts.Node, scope: tuple[str, ...], ctx: PartContext) -> str | None:
    """The class a member defined outside it belongs to, as written (``W``, ``lib::V<T>``);
    None for any other function (one of a namespace, written ``ns::f``, is no class's)."""
    declarator = inner_declarator(function.child_by_field_name("declarator"))
    named = declarator.child_by_field_name("declarator") if declarator is not None else None
    if named is None or named.type != "qualified_identifier":
        return None
    qualifier = compact(named.text.decode()).rsplit("::", 1)[0]
    plain = re.sub(r"<[^<>]*>", "", qualifier).removesuffix(f"__hf{ctx.index}")
    return None if ctx.resolver.namespace(scope, plain) in ctx.resolver.namespaces else qualifier


def signature_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    """Rename a helper's definition to its per-part copy and add the context parameter."""
    function = next(n for n in walk(definition.root) if n.type == "function_definition")
    declarator = inner_declarator(function.child_by_field_name("declarator"))
    name = declarator.child_by_field_name("declarator")
    if name.type == "template_function":  # an explicit specialisation: ``cast__hf1<half2, float>``
        name = name.child_by_field_name("name")
    params = declarator.child_by_field_name("parameters")
    return [TextEdit.replace(name, ctx.clone_name(name.text.decode())), context_parameter(params)]


def context_parameter(params: ts.Node) -> TextEdit:
    """The part's context as the first parameter of a parameter list (so default arguments
    and ``...`` stay last)."""
    new_param = f"const hfuse_ctx& {CTX}"
    real = [p for p in params.named_children if p.type != "comment"]
    if not real or (len(real) == 1 and real[0].text.decode() == "void"):
        return TextEdit(params.start_byte + 1, params.end_byte - 1, new_param)
    return TextEdit(params.start_byte + 1, params.start_byte + 1, f"{new_param}, ")
