"""Turn one kernel (and the helpers it reaches) into a fused part's device code.

The kernel becomes ``<kernel>__hf<i>`` a ``__device__ __forceinline__`` function with
the original parameters plus the part's context; its body is the original text with
only built-ins, barriers, cooperative groups, dynamic shared memory and calls to
specialised helpers rewritten. Each helper that needs the context gets a per-part copy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import HFuseError, Location
from ..frontend.model import INITIALISERS, Function, Param, Scope, TopLevelItem, qualify
from ..frontend.parse import inner_declarator, parse, source_text, walk
from .analysis import ProgramFacts
from .barriers import barrier_edits
from .builtins import builtin_edits
from .calls import call_edits, context_parameter, signature_edits
from .context import CTX, PartContext
from .context_types import context_type_edits, static_member_edits, type_copy
from .register_keyword import register_edits
from .compound_literals import compound_literal_edits
from .symbols import symbol_edits
from .cooperative_groups import cooperative_groups_edits
from .definition import Definition
from .early_exit import early_exit_edits
from .lambda_capture import lambda_capture_edits
from .lambda_spaces import lambda_space_edits
from .edits import OverlappingEdits, TextEdit, apply_edits
from .shared_memory import shared_memory_edits
from .static_shared import static_shared_edits


@dataclass(frozen=True)
class ScopedCode:
    """A definition and the namespaces it must be emitted in (so its own names still resolve)."""

    scope: Scope
    text: str
    file: Path | None = None
    """Where the user wrote it, and on which line it starts (``codegen/macros.py`` gives it the
    user's macros back from there); None for what hfuse writes."""
    line: int = 0


@dataclass(frozen=True)
class PartCode:
    """Device code of one fused part: type and helper copies (callees first) and the body.
    ``types`` is what must precede the helpers that take a type copy: the part's symbol
    copies, the helpers that name no type copy, then the type copies."""

    types: tuple[ScopedCode, ...]
    helpers: tuple[ScopedCode, ...]
    body: ScopedCode
    body_name: str
    """How the fused kernel (at file scope) calls the body: fully qualified."""


REWRITES = (builtin_edits, barrier_edits, cooperative_groups_edits, shared_memory_edits, call_edits,
            context_type_edits, symbol_edits, register_edits, static_shared_edits, compound_literal_edits,
            lambda_capture_edits, static_member_edits, lambda_space_edits)
"""Every rewrite of a part's code, applied together (none of their edits overlap)."""


def _rewrite(definition: Definition, ctx: PartContext, rename_signature: bool = False) -> str:
    """The part's version of one definition (a function, or a context type)."""
    edits = [edit for rewrite in REWRITES for edit in rewrite(definition, ctx)]
    if rename_signature:
        edits += signature_edits(definition, ctx)
    return _applied(definition, edits, ctx)


def _applied(definition: Definition, edits: list[TextEdit], ctx: PartContext) -> str:
    try:
        return apply_edits(definition.data, edits)
    except OverlappingEdits as err:
        raise HFuseError(
            "two rewrites of hfuse claim the same code here (an internal limitation, not your error)",
            Location(definition.file, definition.line + definition.data[: err.start].count(b"\n"), ctx.kernel),
            hint="please report this construct; until then keep this kernel unfused",
        ) from err


def _early_exits_safe(function: Function, ctx: PartContext) -> Definition:
    """The first stage: early returns made safe for named barriers (it restructures the
    body, so the other rewrites run on its result)."""
    definition = Definition(function.text, function.scope, function.file, function.line)
    if ctx.whole_block:
        return definition  # threads that return exit, and release the block's barrier as natively
    edits = early_exit_edits(definition, ctx)
    return Definition(_applied(definition, edits, ctx), function.scope, function.file, function.line)


def _body_function(kernel: Function, ctx: PartContext, program: ProgramFacts) -> str:
    rewritten = _rewrite(_early_exits_safe(kernel, ctx), ctx).encode()
    root = parse(rewritten).root_node
    definition = next(n for n in walk(root) if n.type == "function_definition")
    body = source_text(definition.child_by_field_name("body"), rewritten)
    # the parameters as rewritten (a type the part has its own copy of is renamed there too)
    declarator = inner_declarator(definition.child_by_field_name("declarator"))
    written = [Param(source_text(n, rewritten), None) for n in declarator.child_by_field_name("parameters").named_children
               if n.type != "comment"] if declarator is not None else []
    if len(written) != len(kernel.params):
        written = list(kernel.params)
    params = [_part_parameter(p.declaration, original.name) for p, original in zip(written, kernel.params)]
    params = [p for p in params if p.strip() != "void"] + [f"const hfuse_ctx& {CTX}"]
    header = f"{kernel.template_header}\n" if kernel.template_header else ""
    return f"{header}__device__ __forceinline__ void {ctx.clone_name(kernel.name)}({', '.join(params)})\n{body}"


def _part_parameter(declaration: str, name: str | None) -> str:
    """A kernel parameter as the part's body function takes it. A ``__grid_constant__`` one
    is taken by reference to the fused kernel's: its address stays in the kernel's parameter
    space, which TMA (``cp.async.bulk.tensor``, ``prefetch.tensormap``) needs of ``&tmap``;
    a copy would live in local memory."""
    if not re.search(r"\b__grid_constant__\b", declaration):
        return declaration
    plain = re.sub(r"\b__grid_constant__\b\s*", "", declaration)
    if name and re.search(rf"\b{re.escape(name)}\s*$", plain):
        return re.sub(rf"\s*\b{re.escape(name)}\s*$", f"& {name}", plain)
    return plain


def specialise_part(
    kernel: Function,
    ctx: PartContext,
    program: ProgramFacts,
    functions: dict[str, list[Function]],
    context_types: Sequence[TopLevelItem] = (),
    symbols: Sequence[TopLevelItem] = (),
    primaries: Mapping[str, TopLevelItem] | None = None,
) -> PartCode:
    """``context_types``: the definitions of the context types this part uses (see
    context_types.py); ``symbols``: the definitions of the symbols it has its own copy of;
    ``primaries``: the prototypes of function templates, by key (a helper copied per part
    whose definitions are all explicit specialisations declares its primary's copy first)."""
    symbol_copies = tuple(ScopedCode(item.scope, _rewrite(_definition(item), ctx), item.file, item.line)
                          for item in symbols)
    type_copies = tuple(ScopedCode(item.scope, type_copy(_rewrite(_type_definition(item, ctx), ctx), ctx,
                                                         host_made=bool(set(item.keys) & ctx.host_made)),
                                   item.file, item.line)
                        for item in context_types)
    # the members of a type copy defined outside it, after every helper (so they can call any)
    outside = tuple(ScopedCode(member.scope, _rewrite(_early_exits_safe(member, ctx), ctx), member.file, member.line)
                    for item in context_types for member in item.members if member.defined_outside)
    order = _callees_first(kernel.key, program)
    helpers: list[tuple[str, list[ScopedCode]]] = []  # per helper: its copies, then the using-declarations naming them
    for name in order:
        if name in ctx.specialised and name != kernel.key:
            # a helper's early return skips its own later barriers just like a kernel's
            group = [ScopedCode(fn.scope, _rewrite(_early_exits_safe(fn, ctx), ctx, rename_signature=True),
                                fn.file, fn.line)
                     for fn in functions[name] if not fn.owner]  # (a member is rewritten inside its type's copy)
            if group and all(fn.is_explicit_specialisation for fn in functions[name]) \
                    and (primary := (primaries or {}).get(name)) is not None:
                # `template <> void reduce__hf2<kSum, 1>(...)` specialises the copy's primary, declared first
                group.insert(0, ScopedCode(primary.scope, _primary_copy(primary, ctx), primary.file, primary.line))
            if group:
                helpers.append((name, group + [_using_copy(scope, brought, ctx)
                                               for scope, brought in ctx.resolver.brought_by(name, set(ctx.known))]))
    body = ScopedCode(kernel.scope, _body_function(kernel, ctx, program), kernel.file, kernel.line)
    # a type copy's members may call helper copies, and a helper may take a type copy: the
    # helpers that name no type copy come first (a member's body sees only what precedes its class)
    # (and so do the helpers that call such a helper: the helpers come callees first)
    copies = {ctx.clone_name(key.split("::")[-1]) for item in context_types for key in item.keys}
    first: list[ScopedCode] = []
    later: list[ScopedCode] = []
    for name, group in helpers:
        naming = re.compile(r"\b(" + "|".join(map(re.escape, sorted(copies))) + r")\b") if copies else None
        if naming is not None and any(naming.search(h.text) for h in group):
            later += group
            copies.add(ctx.clone_name(name.split("::")[-1]))
        else:
            first += group
    return PartCode((*symbol_copies, *first, *type_copies), (*later, *outside), body,
                    "::" + qualify(kernel.scope, ctx.clone_name(kernel.name)))


def _primary_copy(prototype: TopLevelItem, ctx: PartContext) -> str:
    """The part's copy of a function template only declared (LightSeq's ``template <ReduceType
    R, int N> __device__ void blockReduce(float*);``, whose instances are its explicit
    specialisations): renamed, the part's context its first parameter; still only declared."""
    data = prototype.text.encode()
    root = parse(data).root_node
    declarator = next((n for n in walk(root) if n.type == "function_declarator"), None)
    named = declarator.child_by_field_name("declarator") if declarator is not None else None
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    if named is None or params is None or named.type != "identifier":
        raise HFuseError(f"hfuse could not read the declaration of the function template '{prototype.names[0]}', "
                         "whose explicit specialisations this kernel calls, to declare each part's copy of it",
                         Location(prototype.file, prototype.line, ctx.kernel),
                         hint="define the primary template (or keep this kernel unfused)")
    return apply_edits(data, [TextEdit.replace(named, ctx.clone_name(named.text.decode())), context_parameter(params)])


def _using_copy(scope: Scope, brought: str, ctx: PartContext) -> ScopedCode:
    """``using d::lanes;`` of namespace ``scope`` for the part: ``using d::lanes__hf2;``, so
    the part's calls of ``lanes`` from there reach its copy (the original is not emitted)."""
    qualifier, name = brought.rsplit("::", 1)
    return ScopedCode(scope, f"using {qualifier}::{ctx.clone_name(name)};")


def _type_definition(item: TopLevelItem, ctx: PartContext) -> Definition:
    """A context type's definition with each member function written in it made safe for
    its early returns first, as a helper's is (a member's ``return`` before its barrier left
    the returned threads' warps out of the part's named barrier: a hang)."""
    text = item.text
    for member in item.members:
        if member.defined_outside or member.hidden_friend or member.name == INITIALISERS or "return" not in member.text:
            continue
        safe = _early_exits_safe(member, ctx).text
        if safe != member.text and text.count(member.text) == 1:
            text = text.replace(member.text, safe)
    return Definition(text, item.scope, item.file, item.line)


def _definition(item: TopLevelItem) -> Definition:
    return Definition(item.text, item.scope, item.file, item.line)


def _callees_first(root: str, program: ProgramFacts) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in program.facts:
            return
        order.append(name)  # placeholder against cycles (recursion was refused earlier)
        for f in program.facts[name]:
            for callee in sorted(f.calls):
                visit(callee)
        order.remove(name)
        order.append(name)

    visit(root)
    return order
