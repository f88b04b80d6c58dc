"""Emitting a planned region as text: the flag, guarded work, barriers every thread reaches."""
from __future__ import annotations

import re
from typing import Any, Callable

import tree_sitter as ts

from ...frontend.parse import declarator_name, walk
from ..cuda_syntax import called_name
from ..edits import apply_edits_in, TextEdit
from .function import ParsedFunction
from .plan import Item
from .syntax import _base_identifier, _CALL_HINT, FLAG, _guard, guard_work, _HINT, _indented, _LOOP_HINT, _real, _RED, RESULT




class RegionWriter:
    def __init__(self, fn: ParsedFunction, exits: bool, flagged: Callable[..., Any]):
        self.fn = fn
        self.exits = exits
        self.flagged = flagged
        """``rewrite.flagged``: a helper's text given the activity flag (the rewrite, recursively)."""

    def region(self, items: list[Item], indent: str) -> list[str]:
        fn = self.fn
        out: list[str] = []
        chunk: list[ts.Node] = []
        pending: list[ts.Node] = []

        def flush(position: int) -> None:
            if not chunk:
                return
            later = [it.node for it in items[position:]]
            hoisted, kept = _hoist(fn, chunk, later)
            out.extend(indent + h for h in hoisted)
            if kept:
                out.append(f"{indent}if ({FLAG}) {{")
                out.extend(_indented(k, indent + "  ") for k in kept)
                out.append(f"{indent}}}")
            chunk.clear()

        for position, item in enumerate(items):
            if item.kind == "preproc":
                pending.append(item.node)
                continue
            if item.kind == "work":
                chunk.extend(pending)
                pending.clear()
                chunk.append(item.node)
                continue
            flush(position)
            out.extend(_indented(fn.src(p).rstrip("\n"), indent) for p in pending)
            pending.clear()
            out.extend(self.item(item, indent))
        chunk.extend(pending)
        flush(len(items))
        return out

    def item(self, item: Item, indent: str) -> list[str]:
        fn, node = self.fn, item.node
        kind = item.kind
        if kind in ("keep", "barrier", "pure"):
            ending = node.next_sibling  # a local 'struct S {...};': the grammar leaves the ';' outside
            closing = ";" if node.type.endswith("_specifier") and ending is not None and ending.type == ";" else ""
            return [_indented(fn.src(node) + closing, indent)]
        if kind == "return":
            return [self.return_text(node, indent)]
        if kind == "bad":
            raise fn.refuse(node, item.why)
        if kind == "guard":
            return self.guard(item, indent)
        if kind == "call":
            return self.call(item, indent)
        if kind == "block":
            return [f"{indent}{{", *self.region(item.sub, indent + "  "), f"{indent}}}"]
        if kind == "loop":
            why = fn.loop_why(node)
            if why is not None:
                raise fn.refuse(node, (
                    f"the loop at line {fn.line(node)} reaches a barrier, so the threads that returned must run it "
                    f"exactly as often as the others, but its control {why}"), hint=_LOOP_HINT)
            body = node.child_by_field_name("body")
            inner = self.region(item.sub, indent + "  ")
            if node.type == "do_statement":
                tail = self.control_text(body.end_byte, node.end_byte).strip()
                return [f"{indent}do {{", *inner, f"{indent}}} {tail}"]
            head = self.control_text(node.start_byte, body.start_byte).rstrip()
            return [f"{indent}{head} {{", *inner, f"{indent}}}"]
        if kind == "if":
            condition = node.child_by_field_name("condition")
            why = fn.non_uniform(condition, fn.uniform)
            if why is not None:
                raise fn.refuse(node, (
                    f"the 'if' at line {fn.line(node)} holds a barrier or a return, so every thread must take the same "
                    f"branch, but its condition {why}"), hint=_LOOP_HINT)
            consequence = node.child_by_field_name("consequence")
            head = self.control_text(node.start_byte, consequence.start_byte).rstrip()
            lines = [f"{indent}{head} {{", *self.region(item.sub, indent + "  "), f"{indent}}}"]
            if item.other is not None:
                lines[-1] += " else {"
                lines += [*self.region(item.other, indent + "  "), f"{indent}}}"]
            return lines
        raise ValueError(f"a region item of unknown kind {kind!r}")  # a bug of hfuse: reported as one

    def control_text(self, start: int, end: int) -> str:
        """Source between two offsets with the predicates of ``__syncthreads_*`` made neutral."""
        fn = self.fn
        edits = []
        for n in walk(fn.tree.root_node):
            if n.type == "call_expression" and called_name(n) in _RED and start <= n.start_byte and n.end_byte <= end:
                edits.append(self.red_edit(n))
        return apply_edits_in(fn.data, start, end, [e for e in edits if e is not None])

    def red_edit(self, call: ts.Node) -> TextEdit | None:
        args = _real(call.child_by_field_name("arguments").named_children)
        if len(args) != 1:
            return None
        p = self.fn.src(args[0])
        text = f"!{FLAG} || ({p})" if _RED[called_name(call)] == "and" else f"{FLAG} && ({p})"
        return TextEdit(args[0].start_byte, args[0].end_byte, text)

    def return_text(self, node: ts.Node, indent: str) -> str:
        fn = self.fn
        values = _real(node.named_children) if node.type == "return_statement" else []
        if values and fn.pure(values[0]) is not None:
            return f"{indent}if ({FLAG}) {fn.src(node).strip()}\n{indent}return {{}};"
        return _indented(fn.src(node), indent)

    def guard(self, item: Item, indent: str) -> list[str]:
        fn, node = self.fn, item.node
        condition, value = _guard(node)
        work = guard_work(node)
        if item.late:
            # no barrier follows: the threads still active may simply leave
            ret = next(n for n in walk(node) if n.type == "return_statement")
            cond = self.control_text(condition.start_byte, condition.end_byte)
            if work is not None:
                return [f"{indent}if ({FLAG} && {cond}) " + _indented(fn.src(node.child_by_field_name("consequence")),
                                                                    indent).lstrip()]
            return [f"{indent}if ({FLAG} && {cond}) {fn.src(ret).strip()}"]
        if fn.non_uniform(condition, fn.uniform) is None:
            # every thread of the part takes it alike: a plain return is safe
            if value is not None and fn.pure(value) is not None:
                ret = next(n for n in walk(node) if n.type == "return_statement")
                return [f"{indent}if {fn.src(condition)} {{", self.return_text(ret, indent + "  "), f"{indent}}}"]
            return [_indented(fn.src(node), indent)]
        if value is not None:
            raise fn.refuse(node, (
                f"'{fn.describe(node)}' at line {fn.line(node)} returns a value from only some threads; "
                "hfuse rewrites only guards that return nothing"))
        cond = self.control_text(condition.start_byte, condition.end_byte)
        if work is not None:
            # the work the leaving threads did before returning, then they stop being active
            start = fn.data.rfind(b"\n", 0, work[0]) + 1  # (whole lines: the work's own indentation, replaced)
            text = fn.data[start:work[1]].decode().rstrip().splitlines()
            base = min((len(line) - len(line.lstrip()) for line in text if line.strip()
                        and not line.lstrip().startswith("#")), default=0)
            body = [indent + "  " + (line[base:] if line[:base].isspace() else line.lstrip()) for line in text]
            lines = [f"{indent}if ({FLAG} && {cond}) {{", *body, f"{indent}  {FLAG} = false;", f"{indent}}}"]
        else:
            lines = [f"{indent}if ({FLAG} && {cond}) {FLAG} = false;"]
        if self.exits:
            lines.append(f"{indent}if (__any_sync(0xffffffffu, {FLAG}) && !{FLAG}) return;"
                         "  // leave only if the warp keeps an active thread")
        return lines

    def call(self, item: Item, indent: str) -> list[str]:
        fn, node, call = self.fn, item.node, item.call
        name = called_name(call)
        if name in _RED:
            edit = self.red_edit(call)
            new_call = apply_edits_in(fn.data, call.start_byte, call.end_byte, [edit] if edit else [])
        else:
            new_call = self.helper_call(node, call, name)
        before = fn.data[node.start_byte : call.start_byte].decode()
        after = fn.data[call.end_byte : node.end_byte].decode()
        if node.type == "expression_statement" and node.named_children[0].type == "assignment_expression":
            assignment = node.named_children[0]
            target = assignment.child_by_field_name("left")
            if _base_identifier(target) is None or target.type != "identifier":
                operator = assignment.child_by_field_name("operator").type
                right = assignment.child_by_field_name("right")  # the call, or a cast of it
                value = (fn.data[right.start_byte : call.start_byte].decode() + new_call
                         + fn.data[call.end_byte : right.end_byte].decode())
                return [f"{indent}{{", f"{indent}  auto {RESULT} = {value};",
                        f"{indent}  if ({FLAG}) {fn.src(target)} {operator} {RESULT};", f"{indent}}}"]
        return [_indented(before + new_call + after, indent)]

    def helper_call(self, statement: ts.Node, call: ts.Node, name: str) -> str:
        fn = self.fn
        definitions = fn.helpers.definitions(name)
        where = f"'{name}' synchronises and is called at line {fn.line(call)}: the threads that returned must call it too"
        if not definitions:
            raise fn.refuse(call, f"{where}, but hfuse cannot see its definition")
        if len(definitions) > 1:
            raise fn.refuse(call, f"{where}, but it has {len(definitions)} definitions (overloads or namespaces) and "
                                  "hfuse gives only a single definition the activity flag")
        attempt = self.flagged(definitions[0], fn.helpers, fn.file, fn.kernel)
        if attempt.error is not None:
            err = attempt.error
            raise fn.refuse(call, f"{where}, with its work switched off, which fails inside '{name}' "
                                  f"({err.where.file}:{err.where.line}): {err.message}", hint=err.hint or _HINT)
        args = _real(call.child_by_field_name("arguments").named_children)
        if attempt.params is None or len(args) != len(attempt.params):
            raise fn.refuse(call, f"{where}, with an extra activity argument, so the call must pass every parameter "
                                  f"explicitly ({len(args)} given, '{name}' takes "
                                  f"{'a variable number' if attempt.params is None else len(attempt.params)})")
        for arg in args:
            bad = fn.pure(arg)
            if bad is not None:
                raise fn.refuse(call, f"{where}, so they evaluate its arguments, but '{fn.describe(arg)}' "
                                      f"{'reads memory' if bad.type in ('subscript_expression', 'field_expression', 'pointer_expression') else 'has effects'} "
                                      f"('{fn.describe(bad)}')", hint=_CALL_HINT)
        arguments = call.child_by_field_name("arguments")
        inner = fn.data[arguments.start_byte + 1 : arguments.end_byte - 1].decode()
        joined = f"{inner}, {FLAG}" if args else FLAG
        return fn.data[call.start_byte : arguments.start_byte].decode() + f"({joined})"


def _hoist(fn: ParsedFunction, chunk: list[ts.Node], later: list[ts.Node]) -> tuple[list[str], list[str]]:
    """Split declarations that ``later`` statements use into a hoisted part and an assignment."""
    used_later = {n.text.decode() for s in later for n in walk(s) if n.type == "identifier"}
    hoisted: list[str] = []
    kept: list[str] = []
    for statement in chunk:
        if statement.type != "declaration":
            kept.append(fn.src(statement))
            continue
        declarators = statement.children_by_field_name("declarator")
        names = [declarator_name(d) for d in declarators]
        if not any(n is not None and n.text.decode() in used_later for n in names):
            kept.append(fn.src(statement))
            continue
        words = {c.text.decode() for c in statement.named_children if c.type in ("type_qualifier", "storage_class_specifier")}
        type_node = statement.child_by_field_name("type")
        if words & {"constexpr", "static", "extern", "__shared__"} or type_node.type == "placeholder_type_specifier":
            raise fn.refuse(statement, f"'{fn.describe(statement)}' is used after a barrier and cannot be hoisted "
                                       "out of the guarded code")
        type_text = fn.data[statement.start_byte : declarators[0].start_byte].decode().strip()
        for declarator in declarators:
            if declarator.type != "init_declarator":
                hoisted.append(f"{type_text} {fn.src(declarator)};")
                continue
            value = declarator.child_by_field_name("value")
            target = declarator.child_by_field_name("declarator")
            if _constant(value):
                # (exllamav2's 'float block_c[m_count][4] = {};': no thread need compute a constant,
                # so the declaration goes above the guard whole, its value known before the chunk)
                hoisted.append(f"{type_text} {fn.src(declarator)};")
                continue
            simple = target.type == "identifier"
            pointer = target.type == "pointer_declarator" and all(n.type != "type_qualifier" for n in walk(target))
            if not (simple or pointer) or value.type in ("initializer_list", "argument_list"):
                raise fn.refuse(statement, f"'{fn.describe(statement)}' is used after a barrier and cannot be hoisted")
            own_type = re.sub(r"\bconst\b\s*", "", type_text).strip() if simple else type_text
            hoisted.append(f"{own_type} {fn.src(target)};")
            kept.append(f"{declarator_name(target).text.decode()} = {fn.src(value)};")
    return hoisted, kept


_CONSTANT_NODES = frozenset({"initializer_list", "number_literal", "true", "false", "nullptr", "char_literal",
                             "unary_expression", "parenthesized_expression", "-", "+", "{", "}", ",", "(", ")"})


def _constant(value: ts.Node) -> bool:
    """An initialiser made of literals alone (``{}``, ``{0.f, 1.f}``, ``-1``): the same whatever
    ran before it."""
    return all(n.type in _CONSTANT_NODES for n in walk(value))
