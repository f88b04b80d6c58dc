"""Function templates that measure or cast to a type parameter which a block-reading type
may reach (``context_types``): the part's copy of such a type carries the part's view of
the block in a member, so ``sizeof(F)`` of the copy is not the type's, and an object cast
from memory (``reinterpret_cast<F*>(p)``) has no view. Such a template is refused where the
part gives it a block-reading type, explicitly (``measure<LaneFn>(...)``) or deduced from an
object (``measure(LaneFn{}, x)``, ``measure(f, x)`` with ``LaneFn f``), also through
templates that pass their own parameter on (``run(f)`` calling ``measure(f, x)``); one
given only plain types (Apex's ``cuWelfordMuSigma2(vals, ..., U& mu, ..., U* buf)`` with
``U = float``, which casts ``(U*)buf``) fuses."""
from __future__ import annotations

import re
from typing import Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.model import Function, TopLevelItem
from ..frontend.parse import parse, walk
from .context import BoundParameter
from .aliases import type_aliases

_TYPE_PARAMETER = re.compile(r"(?:typename|class)\s*(?:\.\.\.\s*)?(\w+)")


def check_measuring_templates(kernel: Function, spec_name: str, reachable: Sequence[Function],
                              types: Sequence[TopLevelItem], bound: Sequence[BoundParameter] = ()) -> None:
    """Refuse a template of ``reachable`` that measures or casts to a type parameter that
    a type of ``types`` (the part's block-reading types) may be given; ``bound``: the
    kernel's own template parameters the instance binds to one."""
    names = frozenset(item.names[0].split("<")[0].split("::")[-1] for item in types if item.names)
    if not names:
        return
    reached = _reached(kernel, reachable, names, {b.name for b in bound})
    aliases = frozenset(alias for alias, _ in type_aliases(types))
    for fn in reachable:
        for param in _TYPE_PARAMETER.findall(fn.template_header):
            what = _measures(fn, param, aliases)
            if what is not None and (fn.name, param) in reached:
                raise HFuseError(
                    f"'{fn.name}' {what} its type parameter '{param}', and this kernel gives it a type that reads "
                    f"the block ({', '.join(sorted(names))}): each part's copy of such a type carries the part's "
                    "view of the block in a member, so it is larger than the type, and an object cast from memory "
                    "has none", Location(fn.file, fn.line, spec_name),
                    hint="read threadIdx/blockIdx outside the type (in a free helper or the kernel), or keep this "
                         "kernel unfused")


def _measures(fn: Function, param: str, aliases: frozenset[str] = frozenset()) -> str | None:
    """What ``fn``'s body does with type parameter ``param`` that the part's copy of a type
    would change (None: nothing). A ``__shared__`` variable is one of the type where its type
    is the parameter, or a member alias of it that names a block-reading type (``aliases``);
    not where a member's value sizes it (``__shared__ float smem[Ktraits::WARPS];``)."""
    if not fn.is_template or fn.is_explicit_specialisation:
        return None
    body = fn.text[fn.text.find("{"):] if "{" in fn.text else ""
    objects = [p.name for p in fn.params if p.name and re.search(rf"\b{param}\b", p.declaration)]
    for what, pattern in (
            ("takes the size or alignment of", rf"\b(?:sizeof|alignof|__alignof__)\s*\(\s*(?:const\s+)?"
                                               rf"(?:{'|'.join([param, *map(re.escape, objects)])})\b"),
            ("casts to", rf"_cast\s*<\s*(?:const\s+)?{param}\s*[*&]|\(\s*(?:const\s+)?{param}\s*[*&]\s*\)"),
            ("declares a __shared__ variable of", rf"__shared__[^;\[]*\b{param}\b(?!\s*::)|__shared__[^;\[]*"
                                                  rf"\b{param}\s*::\s*(?:template\s+)?(?:{'|'.join(aliases) or '$^'})\b")):
        if re.search(pattern, body):
            return what
    return None


def _reached(kernel: Function, reachable: Sequence[Function], names: frozenset[str],
             bound: set[str]) -> set[tuple[str, str]]:
    """The (template's name, type parameter) pairs that may be given a block-reading type
    (``names``), to a fixed point over the calls among ``reachable``."""
    reached = {(kernel.name, param) for param in bound}
    trees = {id(fn): parse(fn.text.encode()).root_node for fn in reachable}
    templates = [fn for fn in reachable if fn.is_template and not fn.is_explicit_specialisation]
    while True:
        before = len(reached)
        for caller in reachable:
            carried = names | {param for name, param in reached if name == caller.name}
            typed = _objects_of(trees[id(caller)], carried)
            for call in (n for n in walk(trees[id(caller)]) if n.type == "call_expression"):
                for callee in templates:
                    reached |= _given(call, callee, carried, typed)
        if len(reached) == before:
            return reached


def _objects_of(root: ts.Node, carried: frozenset[str] | set[str]) -> set[str]:
    """Names declared (parameters, locals) with a type that names one of ``carried``, or
    ``auto`` and initialised with an object of one (``auto f = LaneFn{};``)."""
    found: set[str] = set()
    for node in walk(root):  # (in order: ``auto g = f;`` after f's declaration sees it)
        if node.type not in ("declaration", "parameter_declaration", "optional_parameter_declaration"):
            continue
        written = node.child_by_field_name("type")
        if written is None:
            continue
        named = any(n.text.decode() in carried for n in walk(written) if n.type in ("type_identifier", "identifier"))
        deduced = written.type == "placeholder_type_specifier"
        for declarator in node.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
            if not named and not (deduced and value is not None and _carries(value, carried, found)):
                continue
            name = next((n.text.decode() for n in walk(declarator) if n.type == "identifier"), None)
            if name is not None:
                found.add(name)
    return found


def _given(call: ts.Node, callee: Function, carried: frozenset[str] | set[str], typed: set[str]) -> set[tuple[str, str]]:
    """The type parameters of ``callee`` that ``call`` (if it calls it) gives a carried type."""
    function = call.child_by_field_name("function")
    explicit: tuple[ts.Node, ...] = ()
    while function is not None and function.type in ("qualified_identifier", "template_function"):
        if function.type == "template_function":
            listed = function.child_by_field_name("arguments")
            explicit = tuple(listed.named_children) if listed is not None else ()
        function = function.child_by_field_name("name")
    if function is None or function.text.decode() != callee.name:
        return set()
    params = _TYPE_PARAMETER.findall(callee.template_header)
    order = callee.template_params
    out = set()
    for position, argument in enumerate(explicit):
        if position < len(order) and order[position] in params and any(
                n.text.decode() in carried for n in walk(argument) if n.type in ("type_identifier", "identifier")):
            out.add((callee.name, order[position]))
    arguments = call.child_by_field_name("arguments")
    for param_decl, argument in zip(callee.params, arguments.named_children if arguments is not None else ()):
        head = param_decl.declaration
        for param in params:
            if re.search(rf"\b{param}\b", head) and _carries(argument, carried, typed):
                out.add((callee.name, param))
    return out


def _carries(argument: ts.Node, carried: frozenset[str] | set[str], typed: set[str]) -> bool:
    """Whether ``argument`` is an object of a carried type: a name declared so, or a
    temporary made of one (``LaneFn{}``, ``Op(2.f)``)."""
    if argument.type == "pointer_expression":  # (``&f``, ``*p``: the object's type is what is carried)
        operand = argument.child_by_field_name("argument")
        return operand is not None and _carries(operand, carried, typed)
    if argument.type == "identifier":
        return argument.text.decode() in typed
    head = argument.child_by_field_name("type") or argument.child_by_field_name("function")
    return head is not None and any(n.text.decode() in carried for n in walk(head)
                                    if n.type in ("type_identifier", "identifier"))
