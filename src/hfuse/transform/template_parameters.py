"""Calls through a function's template parameters: ``op(x)`` of ``template <class Op>``,
``ACT_FN(x)`` of ``template <float (*ACT_FN)(float)>``. What they call is the instance's
choice, which the analysis asks of the instance (``FunctionFacts.parameter_calls``)."""
from __future__ import annotations

import re

import tree_sitter as ts

from ..frontend.model import Function
from ..frontend.parse import walk


def type_parameters_of(function: Function) -> frozenset[str]:
    """The template type parameters of ``function`` itself (``F`` and ``Args`` of ``template
    <typename F, int N, class... Args>``)."""
    return frozenset(re.findall(r"\b(?:typename|class)\s*(?:\.\.\.)?\s*([A-Za-z_]\w*)", function.template_header))


def locals_of_type_parameters(root: ts.Node, type_parameters: frozenset[str]) -> dict[str, str]:
    """The function's own variables of a template type parameter (``Op op;``): name -> parameter."""
    found: dict[str, str] = {}
    if not type_parameters:
        return found
    for node in walk(root):
        if node.type != "declaration" or (kind := node.child_by_field_name("type")) is None:
            continue
        written = kind.text.decode().strip()
        if written not in type_parameters:
            continue
        for declarator in node.children_by_field_name("declarator"):
            named = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
            if named is not None and named.type == "identifier":
                found[named.text.decode()] = written
    return found


def through_template_parameter(node: ts.Node, function: Function, type_parameters: frozenset[str],
                                typed_locals: dict[str, str] | None = None) -> str | None:
    """``f(x)``, ``f.apply(x)``, ``f->apply(x)`` or ``F::apply(x)``, ``f`` a parameter of type
    ``F`` (``F``, ``const F&``, ``F*``) of the function's template type parameters: ``F``; or
    ``ACT_FN(x)``, a call of a non-type template parameter: ``ACT_FN``."""
    if not function.template_params:
        return None
    target = node.child_by_field_name("function")
    if target is not None and target.type == "field_expression":
        target = target.child_by_field_name("argument")
    if target is not None and target.type == "qualified_identifier":
        scope = target.child_by_field_name("scope")
        written = scope.text.decode() if scope is not None else ""
        return written if written in type_parameters else None
    if target is None or target.type != "identifier":
        return None
    name = target.text.decode()
    if name in function.template_params:
        return name  # ACT_FN(x) of template <float (*ACT_FN)(float)>: the function the instance gives
    if typed_locals and name in typed_locals:
        return typed_locals[name]  # Op op; op(x)
    for param in function.params:
        if param.name == name:
            written = re.sub(r"\b(?:const|volatile|__restrict__)\b|[\s&*]", "", param.text[: param.name_start])
            return written if written in type_parameters else None
    return None
