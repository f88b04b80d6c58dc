"""EarlyExitRewrite: an early ``return`` must not leave a named barrier waiting forever.

Natively, ``if (i >= n) return;`` followed by ``__syncthreads()`` works: exited threads
no longer count. A named barrier waits for a fixed number of threads, so a thread that
left early would hang the others. We make the common shape safe: top-level guards
``if (cond) return;`` before top-level barriers become a flag; the work between barriers
runs only while the flag holds, and every thread still arrives at every barrier:

    if (i >= n) return;             bool hf_active = true;
    float v = a[i];                 if (hf_active && (i >= n)) hf_active = false;
    s[t] = v;                 ->    float v;
    __syncthreads();                if (hf_active) { v = a[i]; s[t] = v; }
    b[i] = s[t ^ 1] + v;            hfuse barrier
                                    if (hf_active) { b[i] = s[t ^ 1] + v; }

Declarations that later chunks use are hoisted out of their chunk. Anything else (a
return inside a loop before a barrier, a barrier inside a loop after a guard, a helper
that synchronises) is refused with the lines involved: never emit a hang.
"""
from __future__ import annotations

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.extract import declarator_name
from ..frontend.parse import line_of, parse, walk
from .analysis import SYNC_BUILTINS, called_name, cg_block_variables, is_block_sync_call, is_cg_sync_call

FLAG = "hf_active"
_HINT = (
    "make every thread reach every barrier: wrap the work in 'if (i < n) { ... }' instead of returning, "
    "or move the return after the last __syncthreads()"
)


def _function_body(root: ts.Node) -> ts.Node:
    for node in walk(root):
        if node.type == "function_definition":
            return node.child_by_field_name("body")
    raise AssertionError("no function definition")


class _Barriers:
    def __init__(self, root: ts.Node, helpers_with_barriers: set[str]):
        self.block_vars = cg_block_variables(root)
        self.helpers = helpers_with_barriers

    def is_barrier_call(self, node: ts.Node) -> bool:
        name = called_name(node) if node.type == "call_expression" else None
        return (
            name in SYNC_BUILTINS
            or name in self.helpers
            or (node.type == "call_expression" and (is_cg_sync_call(node) or is_block_sync_call(node, self.block_vars)))
        )

    def reaches(self, statement: ts.Node) -> bool:
        return any(self.is_barrier_call(n) for n in walk(statement))

    def is_plain(self, statement: ts.Node) -> bool:
        """``__syncthreads();`` or ``block.sync();`` alone: safe to run with the flag off."""
        if statement.type != "expression_statement" or not statement.named_children:
            return False
        call = statement.named_children[0]
        if call.type != "call_expression" or not self.is_barrier_call(call):
            return False
        return called_name(call) in (None, "__syncthreads")


def _returns(node: ts.Node) -> list[ts.Node]:
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "lambda_expression":
            continue
        if current.type == "return_statement":
            found.append(current)
        stack.extend(current.children)
    return found


def _guard_condition(statement: ts.Node) -> ts.Node | None:
    """The condition of ``if (cond) return;`` (no else, no value), else None."""
    if statement.type != "if_statement" or statement.child_by_field_name("alternative") is not None:
        return None
    then = statement.child_by_field_name("consequence")
    if then.type == "compound_statement":
        inner = [c for c in then.named_children if c.type != "comment"]
        then = inner[0] if len(inner) == 1 else None
    if then is None or then.type != "return_statement" or then.named_children:
        return None
    condition = statement.child_by_field_name("condition")
    if condition.child_by_field_name("initializer") is not None:
        return None
    return condition


def make_early_exits_safe(text: str, helpers_with_barriers: set[str], file: str, line_base: int, kernel: str) -> str:
    data = text.encode()
    body = _function_body(parse(data).root_node)
    statements = [c for c in body.named_children]
    barriers = _Barriers(body, helpers_with_barriers)
    reaching = [i for i, s in enumerate(statements) if barriers.reaches(s)]
    if not reaching:
        return text
    last = reaching[-1]
    early = [(i, r) for i, s in enumerate(statements[: last + 1]) for r in _returns(s)]
    if not early:
        return text

    def refuse(node: ts.Node, why: str) -> HFuseError:
        return HFuseError(
            f"early return at line {line_base + line_of(early[0][1])} comes before a barrier "
            f"and cannot be made safe: {why}",
            Location(file, line_base + line_of(node), kernel),
            hint=_HINT,
        )

    for index, ret in early:
        if index == last or _guard_condition(statements[index]) is None:
            raise refuse(ret, "only top-level 'if (cond) return;' guards before top-level barriers can be rewritten")
    first = early[0][0]
    for index in reaching:
        if index > first and not barriers.is_plain(statements[index]):
            raise refuse(statements[index], "a barrier after the return is inside a statement, loop or helper")

    def src(node: ts.Node) -> str:
        return data[node.start_byte : node.end_byte].decode()

    indent = " " * statements[0].start_point[1]

    out = [src(s) for s in statements[:first]]
    out.append(f"bool {FLAG} = true;")
    chunk: list[ts.Node] = []
    rest = statements[first:]

    def flush(position: int) -> None:
        if not chunk:
            return
        later = rest[position:]
        hoisted, kept = _hoist(chunk, later, src, refuse)
        out.extend(hoisted)
        inner = "\n".join(_indented(text, indent + "  ") for text in kept)
        out.append(f"if ({FLAG}) {{\n{inner}\n{indent}}}")
        chunk.clear()

    for position, statement in enumerate(rest):
        condition = _guard_condition(statement) if position < len(rest) else None
        if condition is not None and statement.start_byte <= statements[last].start_byte:
            flush(position)
            out.append(f"if ({FLAG} && {src(condition)}) {FLAG} = false;")
        elif barriers.is_plain(statement):
            flush(position)
            out.append(src(statement))
        else:
            chunk.append(statement)
    flush(len(rest))
    closing = " " * body.end_point[1] if body.end_point[1] > 0 else ""
    new_body = "{\n" + "\n".join(indent + line for line in out) + "\n" + closing[:-1] + "}"
    return (data[: body.start_byte] + new_body.encode() + data[body.end_byte :]).decode()


def _indented(statement: str, indent: str) -> str:
    """Shift a statement right: its first line starts at ``indent``, the others keep their shape."""
    first, *rest = statement.splitlines()
    return "\n".join([indent + first, *("  " + line for line in rest)])


def _hoist(chunk, later, src, refuse) -> tuple[list[str], list[str]]:
    """Split declarations that ``later`` statements use into a hoisted part and an assignment."""
    used_later = {n.text.decode() for s in later for n in walk(s) if n.type == "identifier"}
    hoisted: list[str] = []
    kept: list[str] = []
    for statement in chunk:
        if statement.type != "declaration":
            kept.append(src(statement))
            continue
        declarators = statement.children_by_field_name("declarator")
        names = [declarator_name(d) for d in declarators]
        if not any(n is not None and n.text.decode() in used_later for n in names):
            kept.append(src(statement))
            continue
        qualifiers = {c.text.decode() for c in statement.named_children if c.type in ("type_qualifier", "storage_class_specifier")}
        type_node = statement.child_by_field_name("type")
        if qualifiers & {"const", "constexpr", "static", "extern", "__shared__"} or type_node.type == "placeholder_type_specifier":
            raise refuse(statement, f"'{src(statement).strip()}' is used after a barrier and cannot be hoisted out of the guarded code")
        type_text = src(statement)[: declarators[0].start_byte - statement.start_byte].strip()
        for declarator in declarators:
            if declarator.type != "init_declarator":
                hoisted.append(f"{type_text} {src(declarator)};")
                continue
            value = declarator.child_by_field_name("value")
            target = declarator.child_by_field_name("declarator")
            if target.type != "identifier" or value.type in ("initializer_list", "argument_list"):
                raise refuse(statement, f"'{src(statement).strip()}' is used after a barrier and cannot be hoisted")
            hoisted.append(f"{type_text} {src(target)};")
            kept.append(f"{src(target)} = {src(value)};")
    return hoisted, kept
