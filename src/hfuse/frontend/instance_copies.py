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

A copy Clang cannot compile (an ``if constexpr`` branch discarded only in a template, a
``static_assert`` on a dependent condition) is dropped, and the template alone is read.
"""
from __future__ import annotations

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
    (None where it cannot be written so: a parameter pack, arguments missing)."""
    if not function.is_template or function.is_explicit_specialisation or function.template_pack:
        return None
    args = function.complete_template_args(args)
    data = function.text.encode()
    outer = next((n for n in parse(data).root_node.named_children if n.type == "template_declaration"), None)
    if outer is None or len(args) != len(function.template_params):
        return None
    definition = outer.named_children[-1]
    declared = [p for p in outer.child_by_field_name("parameters").named_children if p.type != "comment"]
    if definition.type != "function_definition" or len(declared) != len(args):
        return None
    lines = []
    for parameter, arg in zip(declared, args):
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
    body = data[definition.start_byte:definition.end_byte].decode()
    text = "\n".join(lines) + f'\n#line {line} "{path}"\n{body}\n'
    return namespace_wrap(function.scope, f"namespace {COPY_NAMESPACE}{index} {{\n{text}}}") + "\n"
