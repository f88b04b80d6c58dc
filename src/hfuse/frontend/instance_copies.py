"""A kernel template's instance written as ordinary code, for Clang to read.

In a kernel template, a call whose arguments depend on a template parameter names no
function until the template is instantiated, and libclang shows no instantiation of the
user's templates: ``lib::block_sum<T>(v)`` finds only the header's template, inside which
``B::Tid()`` names nothing either (PyTorch's ``BlockReduceSum<T, B = Block1D>``). In
ordinary code Clang resolves every call and instantiates the header templates it calls,
whose bodies ``clang.py`` then walks. So each requested instance (``k<float, 4>``) is
copied after the file, its parameters declared as the request gives them (``using T =
float; constexpr int N = 4;``), in a namespace of its own and under ``#line``, so that
Clang reports the kernel's own lines.

A parameter pack is written out as the instance has it: ``Args... args`` of ``Args =
(float, int)`` becomes ``hfuse_Args_0 hfuse_args_0, hfuse_Args_1 hfuse_args_1`` (each type
aliased), each expansion in the body (``args...``,
``std::forward<Args>(args)...``) the list it stands for, ``sizeof...(args)`` its count. A
body that uses the pack otherwise (a fold expression) gets no copy.

A copy Clang cannot compile (an ``if constexpr`` branch discarded only in a template, a
``static_assert`` on a dependent condition) is dropped, and the template alone is read.
"""
from __future__ import annotations

import re
from typing import Sequence

from .extract import template_param_name
from .model import Function, Param, namespace_wrap
from .parse import parse

COPY_NAMESPACE = "hfuse_instance_"
"""The namespace of each copy (``hfuse_instance_0``), which no user code can name."""

_TYPE_PARAMETERS = ("type_parameter_declaration", "optional_type_parameter_declaration")
_VALUE_PARAMETERS = ("parameter_declaration", "optional_parameter_declaration")


def instance_copy(function: Function, args: Sequence[str], index: int) -> str | None:
    """The text of kernel template ``function`` instantiated with ``args`` as ordinary code
    (None where it cannot be written so: arguments missing, a pack used other than expanded)."""
    if not function.is_template or function.is_explicit_specialisation:
        return None
    args = function.complete_template_args(args)
    data = function.text.encode()
    outer = next((n for n in parse(data).root_node.named_children if n.type == "template_declaration"), None)
    fixed = len(function.template_params) - (function.template_pack is not None)
    if outer is None or len(args) < fixed or (function.template_pack is None and len(args) != fixed):
        return None
    definition = outer.named_children[-1]
    declared = [p for p in outer.child_by_field_name("parameters").named_children if p.type != "comment"]
    if definition.type != "function_definition" or len(declared) != len(function.template_params):
        return None
    body = data[definition.start_byte:definition.end_byte].decode()
    pack_aliases = ""
    if function.template_pack is not None:
        written = _pack_written_out(definition, function.template_pack, tuple(args[fixed:]))
        if written is None:
            return None
        pack_aliases, body = written
    lines = []
    for parameter, arg in zip(declared[:fixed], args):
        name = template_param_name(parameter)
        if not name:
            continue  # an unnamed parameter (SFINAE's ``typename = enable_if_t<...>``) names nothing
        if parameter.type in _TYPE_PARAMETERS:
            lines.append(f"using {name} = {arg};")
        elif parameter.type in _VALUE_PARAMETERS:
            lines.append(f"constexpr {Param(parameter.text.decode(), name).declaration} = {arg};")
        elif parameter.type == "template_template_parameter_declaration":
            lines.append(f"template <class... hfuse_args> using {name} = {arg}<hfuse_args...>;")
        else:
            return None
    line = function.line + data[:definition.start_byte].count(b"\n")
    path = str(function.file).replace("\\", "\\\\").replace('"', '\\"')
    text = "\n".join(lines) + "\n" + pack_aliases + f'#line {line} "{path}"\n{body}\n'
    return namespace_wrap(function.scope, f"namespace {COPY_NAMESPACE}{index} {{\n{text}}}") + "\n"


def _pack_written_out(definition, pack: str, types: tuple[str, ...]) -> tuple[str, str] | None:
    """(aliases of ``types``, kernel ``definition``'s text with type pack ``pack`` written out
    as them); None where the pack is used other than in one function parameter and its
    expansions."""
    data = definition.text
    start = definition.start_byte
    declarator = definition.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    if parameters is None:
        return None
    packed = [p for p in parameters.named_children if p.type == "variadic_parameter_declaration"
              and re.search(rf"\b{re.escape(pack)}\b", p.text.decode())]
    if len(packed) != 1:
        return None
    named = [n for n in _walk(packed[0]) if n.type == "variadic_declarator"]
    name = next((c.text.decode() for c in named[0].named_children if c.type == "identifier"), "") if named else ""
    # each type by a name of its own (``const Args&`` of ``int*`` is ``int* const&``, not
    # ``const int*&``), and each parameter a name no user code has
    aliases = "".join(f"using hfuse_{pack}_{j} = {t};\n" for j, t in enumerate(types))
    names = {pack: tuple(f"hfuse_{pack}_{j}" for j in range(len(types))),
             **({name: tuple(f"hfuse_{name}_{j}" for j in range(len(types)))} if name else {})}

    def written_out(pattern: str) -> str:
        return ", ".join(_substituted(pattern, {k: v[j] for k, v in names.items()}) for j in range(len(types)))

    def edit(node, pattern: str) -> tuple[int, int, str]:
        if types:
            return node.start_byte, node.end_byte, written_out(pattern)
        return (*_with_comma(node), "")  # an empty pack's expansion leaves no comma behind

    edits = [edit(packed[0], re.sub(r"\s*\.\.\.\s*", " ", packed[0].text.decode(), count=1))]
    body = definition.child_by_field_name("body")
    for node in _outermost(body, "parameter_pack_expansion"):
        edits.append(edit(node, node.named_children[0].text.decode() if node.named_children else ""))
    text = bytearray(data)
    for first, last, new in sorted(edits, reverse=True):
        text[first - start:last - start] = new.encode()
    either = "|".join(re.escape(k) for k in names)
    counted = re.compile(rf"\bsizeof\s*\.\.\.\s*\(\s*(?:{either})\s*\)")
    out = text.decode()
    at = parameters.start_byte - start  # (every edit is after it)
    head, tail = counted.sub(str(len(types)), out[:at]), counted.sub(str(len(types)), out[at:])
    if re.search(rf"\b(?:{either})\b", tail):
        return None  # used otherwise: a fold expression, a pack of another pattern
    return aliases, head + tail


def _walk(node):
    yield node
    for child in node.named_children:
        yield from _walk(child)


def _outermost(node, kind: str):
    if node is None:
        return
    for child in node.named_children:
        if child.type == kind:
            yield child
        else:
            yield from _outermost(child, kind)


def _with_comma(node) -> tuple[int, int]:
    """``node``'s byte range with its separating comma where it stands in a list."""
    previous, following = node.prev_named_sibling, node.next_named_sibling
    if previous is not None:
        return previous.end_byte, node.end_byte
    if following is not None:
        return node.start_byte, following.start_byte
    return node.start_byte, node.end_byte


def _substituted(text: str, mapping: dict[str, str]) -> str:
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in mapping) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)
