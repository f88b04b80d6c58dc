"""Device variables two parts would race on: refused.

Compiled apart, two launches that use one ``__device__`` variable take turns: a reduction's
"last block" counter (``atomicInc(&retired, gridDim.x)``) is back at 0 when the next launch
starts, an accumulator holds the first launch's sum before the second adds to it. Fused,
both run at once on the one variable, and the results are wrong with no error. A kernel
fused with itself is the common case. So where a part writes a device variable that
another part reads or writes (the same definition: two files' variables of one name are
already one per part, ``transform/symbols.py``), hfuse refuses.

"Writes" is read from the syntax, on the safe side: an assignment or increment of the
variable (or of an element or member of it), its address taken (``&retired``, which is
how atomics write), it passed to a function, or a member function called on it. A table
the host fills and kernels only read is shared as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.model import Function, TopLevelItem
from ..frontend.parse import compact, declared_names, hidden_by_local, line_of, parse, walk
from ..frontend.resolve import LocalNames, Resolver
from ..spec import KernelSpec


@dataclass(frozen=True)
class StateUse:
    """One use of a device variable: its key, whether it may write it, and where."""

    key: str
    writes: bool
    function: Function
    line: int


def device_state_uses(functions: Iterable[Function], variables: Mapping[str, bool], resolver: Resolver) -> list[StateUse]:
    """The uses of ``variables`` in ``functions``: device variables by key, and whether each
    is an array or a pointer (its name is an address: ``bins + i`` and ``float* p = bins``
    may lead to writes, as ``n + 1`` and ``int m = n`` of a scalar do not)."""
    uses = []
    for function in functions:
        tree = parse(function.text.encode())
        local = LocalNames.of(tree.root_node)
        for node in walk(tree.root_node):
            written = _name_written(node)
            if written is None:
                continue
            key = resolver.resolve(function.scope, written, local)
            if key in variables and not (node.type == "identifier" and hidden_by_local(node)):
                uses.append(StateUse(key, _may_write(node, variables[key]), function, function.line - 1 + line_of(node)))
    return uses


def refuse_shared_device_state(kernels: Sequence[tuple[KernelSpec, Sequence[StateUse]]],
                       definitions: Mapping[str, TopLevelItem]) -> None:
    """Refuse two parts of which one writes a device variable the other uses."""
    for i, (first, first_uses) in enumerate(kernels):
        for second, second_uses in kernels[i + 1:]:
            for a, b in ((first_uses, second_uses), (second_uses, first_uses)):
                writer = next((u for u in a if u.writes and any(v.key == u.key for v in b)), None)
                if writer is None:
                    continue
                other = next(v for v in b if v.key == writer.key)
                variable = definitions[writer.key]
                writer_spec, other_spec = (first, second) if a is first_uses else (second, first)
                who = (f"both parts of '{writer_spec.name}' use the device variable '{writer.key}' "
                       f"({variable.file}:{variable.line}), and write it" if writer_spec.name == other_spec.name else
                       f"'{writer_spec.name}' writes the device variable '{writer.key}' ({variable.file}:{variable.line}) "
                       f"and '{other_spec.name}' {'writes' if other.writes else 'reads'} it too")
                raise HFuseError(
                    f"{who} "
                    f"(line {other.line}): compiled apart one launch finished before the other began; fused, they "
                    "would use it at the same time",
                    Location(writer.function.file, writer.line, writer_spec.name),
                    hint="give each kernel its own variable (a second file's variable of the same name is one per "
                         "part), or keep these kernels unfused",
                )


def _name_written(node: ts.Node) -> str | None:
    """The name ``node`` refers to, as written, if it may be a file-scope variable."""
    if node.type == "qualified_identifier" and (node.parent is None or node.parent.type != "qualified_identifier"):
        return compact(node.text.decode())
    if node.type == "identifier" and (node.parent is None or node.parent.type != "qualified_identifier"):
        return node.text.decode()
    return None


def mutable_static_locals(function: Function) -> list[tuple[str, int]]:
    """The ``static`` variables a function declares in its body that are neither
    ``__shared__`` nor constant (name, line): one variable for every thread of every launch."""
    found = []
    body = parse(function.text.encode()).root_node
    for node in walk(body):
        if node.type != "declaration" or node.parent is None or node.parent.type == "translation_unit":
            continue
        words = {c.text.decode() for c in node.children if c.type in ("storage_class_specifier", "type_qualifier")}
        if "static" in words and not words & {"__shared__", "const", "constexpr"}:
            found += [(name, function.line - 1 + line_of(node)) for name in sorted(declared_names(node))]
    return found


_READ_ONLY_LOADS = ("__ldg", "__ldca", "__ldcs", "__ldlu", "__ldcv", "__ldcg")
"""Calls that take an address and only read through it."""


def _may_write(node: ts.Node, address: bool) -> bool:
    """Whether the expression around ``node`` may write what it names (on the safe side);
    ``address``: the name is an array or a pointer.

    An element or member (``table[i]``, ``stats.count``, ``*ptr``) is read unless assigned
    or incremented; the variable itself, its address or an address computed from it
    (``&count``, ``bins + i``) may be written wherever it goes, except into a load
    (``__ldg(&table[i])``)."""
    current, element = node, False
    while True:
        parent = current.parent
        if parent is None:
            return False
        kind = parent.type
        if kind == "parenthesized_expression":
            pass
        elif kind == "subscript_expression":
            if current != parent.child_by_field_name("argument"):
                return False  # it is the index, read
            element = True
        elif kind == "field_expression":
            above = parent.parent
            if above is not None and above.type == "call_expression" and above.child_by_field_name("function") == parent:
                return True  # a member function called on it
            element = True
        elif kind == "pointer_expression" and parent.children and parent.children[0].type == "*":
            element = True
        else:
            break
        current = parent
    itself = address and not element  # the array or pointer itself: whoever gets it may write through it
    if kind == "assignment_expression":
        return _within(current, parent.child_by_field_name("left")) or itself
    if kind == "update_expression":
        return True
    if kind == "pointer_expression" or (kind == "binary_expression" and itself):
        return _address_escapes(parent)  # &x, &x[i], x + i
    if kind == "argument_list":
        return not element  # a scalar too: the parameter may be a reference
    if kind == "init_declarator":
        return itself
    return False


def _address_escapes(node: ts.Node) -> bool:
    """Whether an address computed from a variable may be written through: anywhere but a load."""
    current = node
    while current.parent is not None and current.parent.type in ("parenthesized_expression", "binary_expression",
                                                                   "cast_expression"):
        current = current.parent
    parent = current.parent
    if parent is not None and parent.type == "argument_list" and parent.parent is not None:
        callee = parent.parent.child_by_field_name("function")
        return callee is None or not callee.text.decode().startswith(_READ_ONLY_LOADS)
    return True


def _within(node: ts.Node, ancestor: ts.Node) -> bool:
    return ancestor.start_byte <= node.start_byte and node.end_byte <= ancestor.end_byte
