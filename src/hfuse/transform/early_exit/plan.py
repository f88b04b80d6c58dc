"""The plan of a region: each statement classified (work, barrier, guard, loop, ...)."""
from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter as ts

from ...frontend.parse import declarator_name, is_pragma, walk
from .syntax import _escapes, _guard, _key, _LOOPS, _real, _same, _statements, guard_work

_COMPILE_TIME = ("using_declaration", "alias_declaration", "type_definition", "namespace_alias_definition",
                 "static_assert_declaration", "struct_specifier", "class_specifier", "union_specifier",
                 "enum_specifier")
"""Statements that only declare names for the compiler (``using namespace cg;``, ``using T =
float;``, ``typedef``, ``static_assert``, a local ``struct``): guarded as work, their names
would end with the guard."""


@dataclass
class Item:
    kind: str
    """keep | preproc | guard | return | barrier | call | block | loop | if | bad | pure | work"""
    node: ts.Node
    sub: list["Item"] = field(default_factory=list)
    other: list["Item"] | None = None
    """The else branch of an ``if`` region."""
    call: ts.Node | None = None
    why: str = ""
    late: bool = False
    """After the function's last barrier: a return there is harmless."""


class RegionPlanner:
    """Mixin of ``ParsedFunction``: classifies the statements of a region."""

    def plan(self, statements: list[ts.Node], top: bool) -> list[Item]:
        reach = [self.reaches(s) for s in statements]
        last = max((i for i, r in enumerate(reach) if r), default=-1)
        items = [self.classify(s, reach[i], not top or i <= last) for i, s in enumerate(statements)]
        for i, item in enumerate(items):
            item.late = top and i > last
        self._place_pure(items)
        return items

    def classify(self, s: ts.Node, reaches: bool, before: bool) -> Item:
        if s.type == "comment" and not is_pragma(s, self.data):
            return Item("keep", s)
        if s.type.startswith("preproc") or s.type == "comment":  # a pragma goes with the statement after it
            return Item("preproc", s)
        if s.type in _COMPILE_TIME or _constexpr(s):  # no code runs: it stays where its names are seen by what follows
            return Item("keep", s)
        if _guard(s) is not None and not (reaches and guard_work(s) is not None):
            return Item("guard", s)
        if s.type in ("return_statement", "break_statement", "continue_statement"):
            call = self.sync_call(s) if s.type == "return_statement" else None
            return Item("call", s, call=call) if call is not None else Item("return", s)
        if self.is_plain_barrier(s):
            return Item("barrier", s)
        call = self.sync_call(s)
        if call is not None:
            return Item("call", s, call=call)
        escapes = _escapes(s) if before else []
        if s.type == "compound_statement" and (reaches or escapes):
            return Item("block", s, self.plan(list(s.named_children), False))
        if s.type in _LOOPS and (reaches or escapes):
            return Item("loop", s, self.plan(_statements(s.child_by_field_name("body")), False))
        if s.type == "if_statement" and (reaches or escapes):
            then = self.plan(_statements(s.child_by_field_name("consequence")), False)
            alternative = s.child_by_field_name("alternative")
            other = None
            if alternative is not None:
                inner = _real(alternative.named_children)
                other = self.plan(_statements(inner[0]) if inner else [], False)
            return Item("if", s, then, other)
        if reaches:
            barrier = next(n for n in walk(s) if self.is_barrier_call(n))
            return Item("bad", s, why=(
                f"the barrier '{self.describe(barrier)}' at line {self.line(barrier)} is reached inside "
                f"'{self.describe(s)}', a construct hfuse cannot make every thread run the same way (supported: "
                "the barrier alone, a loop or 'if' whose control is the same in every thread, or 'h(...);', "
                "'x = h(...);', 'T x = h(...);' for a helper h that synchronises)"))
        if escapes:
            return Item("bad", escapes[0], why=(
                f"'{self.describe(escapes[0])}' at line {self.line(escapes[0])} is taken by only some threads inside "
                "the work, before a barrier (only 'if (cond) return;' guards can be rewritten)"))
        if self.pure_declaration(s) or self.pure_update(s):
            return Item("pure", s)
        return Item("work", s)

    def pure_declaration(self, s: ts.Node) -> bool:
        if s.type != "declaration":
            return False
        type_node = s.child_by_field_name("type")
        for declarator in s.children_by_field_name("declarator"):
            if declarator.type != "init_declarator":
                continue
            value = declarator.child_by_field_name("value")
            if value.type == "argument_list" and type_node is not None and type_node.type not in ("primitive_type", "sized_type_specifier"):
                return False
            if self.pure(value) is not None:
                return False
        return True

    def _place_pure(self, items: list[Item]) -> None:
        """A pure declaration runs in every thread only when code outside its chunk of work (or
        another such declaration) uses it; otherwise it stays in the chunk (fewer guarded blocks)."""
        region_level = ("work", "pure", "preproc", "keep")
        declared = {d.text.decode() for item in items if item.node.type == "declaration"
                    for decl in item.node.children_by_field_name("declarator") if (d := declarator_name(decl)) is not None}
        for index in range(len(items) - 1, -1, -1):
            item = items[index]
            if item.kind != "pure":
                continue
            if item.node.type == "declaration":
                names = {d.text.decode() for decl in item.node.children_by_field_name("declarator")
                         if (d := declarator_name(decl)) is not None}
            else:
                names = {n.text.decode() for n in walk(item.node) if n.type == "identifier"
                         and n.parent.type in ("assignment_expression", "update_expression")
                         and _same(n, n.parent.child_by_field_name("left") or n.parent.child_by_field_name("argument"))}
                if not names <= declared:
                    continue  # a variable declared in an outer block: it may be read anywhere later
            end = next((j for j in range(index + 1, len(items)) if items[j].kind not in region_level), len(items))
            users = items[end:] + [it for it in items[index + 1 : end] if it.kind == "pure"]
            if not any(n.type == "identifier" and n.text.decode() in names for it in users for n in walk(it.node)):
                item.kind = "work"

    # ---- uniformity over the whole function

    def guarded(self, items: list[Item], out: set | None = None) -> set:
        """Statements that only the threads still active run (and guard conditions)."""
        out = set() if out is None else out
        for item in items:
            if item.kind in ("work", "guard", "bad"):
                out.add(_key(item.node))
            for sub in (item.sub, item.other or []):
                self.guarded(sub, out)
        return out


def _constexpr(statement: ts.Node) -> bool:
    """A ``constexpr`` local: its value is the compiler's (a constant expression, nothing read or
    run), so every thread may declare it, active or not."""
    return statement.type == "declaration" and any(
        c.type in ("type_qualifier", "storage_class_specifier") and c.text == b"constexpr"
        for c in statement.named_children)

