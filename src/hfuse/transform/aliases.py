"""Aliases of the types whose member functions read the block (``context_types``): the member
aliases a traits struct declares of one (``using ScanT = BlockScan<float, 128>;``), and the
aliases a definition declares that shadow a type's name (``using Stats = Stats<T, 4>;``)."""
from __future__ import annotations

import re
from typing import Sequence

import tree_sitter as ts

from ..frontend.model import TopLevelItem
from ..frontend.parse import walk

MEMBER_ALIAS = re.compile(r"\busing\s+(\w+)\s*=\s*([^;]+);|\btypedef\s+([^;]+?)\s+(\w+)\s*;")
ALIASED = re.compile(r"(?:typename\s+)?(?:::)?(?:\w+\s*::\s*)*(\w+)\s*(?:<.*>)?", re.S)


def type_aliases(types: Sequence[TopLevelItem]) -> tuple[tuple[str, str], ...]:
    """(alias, key) of the member aliases the context types declare of a context type
    (``using BlockReverseScanT = BlockReverseScan<scan_t, kNThreads>;`` in a traits struct that
    is one because it names it): ``typename Ktraits::BlockReverseScanT(smem)`` makes an object
    of the type, which the part's copy constructs with its context. A name these types alias
    two ways is left out (one that a struct of no such type aliases otherwise would be given the
    context where it makes an object: a compile error, never a silent one)."""
    keys = {key.split("::")[-1]: key for item in types for key in item.keys}
    found: dict[str, set[str]] = {}
    for item in types:
        for match in MEMBER_ALIAS.finditer(item.text):
            alias, aliased = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
            named = ALIASED.fullmatch(aliased.strip())
            found.setdefault(alias, set()).add(keys.get(named.group(1), "") if named else "")
    return tuple(sorted((alias, next(iter(k))) for alias, k in found.items() if len(k) == 1 and "" not in k))


class LocalAliases:
    """The aliases a definition declares, and the names they shadow: ``using Stats =
    layer_norm::Stats<T>;`` in a traits struct declares a member ``Stats`` (kept, as ``typename
    Ktraits::Stats`` reads it) that later unqualified uses in its scope name; so does a kernel's
    ``using Stats = typename Ktraits::Stats;`` for ``Stats stats(...)``."""

    def __init__(self, root: ts.Node):
        self.declared: list[tuple[ts.Node, ts.Node, ts.Node | None]] = []  # (declaration, name, aliased type)
        for node in walk(root):
            if node.type == "alias_declaration":
                names, written = [node.child_by_field_name("name")], node.child_by_field_name("type")
            elif node.type == "type_definition":
                names, written = node.children_by_field_name("declarator"), node.child_by_field_name("type")
            else:
                continue
            self.declared += [(node, name, written) for name in names if name is not None
                              and name.type == "type_identifier"]

    def _declaration(self, node: ts.Node) -> tuple[ts.Node, ts.Node, ts.Node | None] | None:
        named = node.parent if node.parent is not None and node.parent.type == "template_type" else node
        if named.parent is not None and named.parent.type == "qualified_identifier" \
                and named.parent.child_by_field_name("name") == named:
            return None  # (``layer_norm::Stats``: the struct, whatever the scope aliases)
        return next((d for d in self.declared if node == d[1] or node.text == d[1].text
                     and d[0].end_byte <= node.start_byte < d[0].parent.end_byte), None)

    def shadowed(self, node: ts.Node) -> bool:
        """``node`` is an alias's name, declared or used."""
        return self._declaration(node) is not None

    def target(self, node: ts.Node) -> ts.Node | None:
        """The name of the type the alias that ``node`` uses names (``Stats`` of ``typename
        Ktraits::Stats``); None where ``node`` uses none, or declares it."""
        found = self._declaration(node)
        if found is None or found[1] == node or found[2] is None:
            return None
        current = found[2]
        while current is not None and current.type not in ("type_identifier", "identifier"):
            current = current.child_by_field_name("type") or current.child_by_field_name("name") if current.type in (
                "type_descriptor", "qualified_identifier", "template_type") else \
                (current.named_children[-1] if current.type == "dependent_type" and current.named_children else None)
        return current
