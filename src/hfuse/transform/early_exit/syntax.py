"""Constants and syntax questions of the early-exit rewrite: what a statement is, where it jumps."""
from __future__ import annotations

from functools import lru_cache
import re
from typing import Iterable

import tree_sitter as ts

from ...frontend.parse import compact, inner_declarator, parse, walk



FLAG = "hf_active"
CALLER_FLAG = "hf_caller_active"
RESULT = "hf_ret"
_HINT = (
    "make every thread reach every barrier: wrap the work in 'if (i < n) { ... }' instead of returning, "
    "or move the return after the last __syncthreads()"
)
_LOOP_HINT = (
    "compute the loop's bounds from blockDim/blockIdx, kernel parameters and constants (before the return, "
    "or in declarations that read no memory), or wrap the work in 'if (i < n) { ... }' instead of returning"
)
_CALL_HINT = "load such values into locals before the call (the locals need not be valid in threads that returned)"

_LOOPS = ("for_statement", "while_statement", "do_statement")
_RED = {"__syncthreads_count": "count", "__syncthreads_or": "or", "__syncthreads_and": "and"}
_UNIFORM_BUILTINS = frozenset({"blockDim", "blockIdx", "gridDim", "warpSize"})
# Functions without side effects whose result depends only on their arguments.
_PURE_CALLS = frozenset({
    "min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "abs", "labs", "llabs", "fabs", "fabsf",
    "fmin", "fminf", "fmax", "fmaxf", "ceil", "ceilf", "floor", "floorf", "log2", "log2f", "sqrt", "sqrtf",
    "__popc", "__popcll", "__clz", "__clzll", "__ffs", "__ffsll", "__brev", "__brevll", "__mul24", "__umul24",
    "__mulhi", "__umulhi", "__mul64hi", "__umul64hi", "__sad", "__usad", "__byte_perm", "__funnelshift_l",
    "__funnelshift_r", "__funnelshift_lc", "__funnelshift_rc", "__float2int_rz", "__float2uint_rz",
    "static_cast", "reinterpret_cast", "const_cast", "dim3", "make_int2", "make_int3", "make_int4", "make_uint2",
    "make_uint3", "make_uint4", "make_float2", "make_float3", "make_float4", "this_thread_block", "tiled_partition",
})
_TYPE_NODES = frozenset({
    "type_descriptor", "primitive_type", "type_identifier", "sized_type_specifier", "template_argument_list",
    "field_identifier", "namespace_identifier", "qualified_identifier", "placeholder_type_specifier",
    "number_literal", "char_literal", "string_literal", "raw_string_literal", "concatenated_string", "true", "false",
    "null", "nullptr", "sizeof_expression", "alignof_expression", "comment",
})
_WARP_SYNC = re.compile(
    r"\b(__\w+_sync|__syncwarp|tiled_partition|thread_block_tile|coalesced_threads|coalesced_group|"
    r"labeled_partition|binary_partition)\b|\b(shfl|vote|match|redux)\.sync\b|\bbar\.warp\.sync\b"
)
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>)?\s*\(")


def _key(node: ts.Node) -> tuple[int, int, str]:
    return (node.start_byte, node.end_byte, node.type)


def _same(a: ts.Node | None, b: ts.Node | None) -> bool:
    return a is not None and b is not None and _key(a) == _key(b)


def _function(root: ts.Node) -> ts.Node | None:
    """The first function definition under ``root`` (None: there is none)."""
    return next((node for node in walk(root) if node.type == "function_definition"), None)


def _function_declarator(definition: ts.Node) -> ts.Node | None:
    return inner_declarator(definition.child_by_field_name("declarator"))


def _plain_name(node: ts.Node | None) -> str | None:
    while node is not None and node.type in ("qualified_identifier", "template_function"):
        node = node.child_by_field_name("name")
    return node.text.decode() if node is not None and node.type in ("identifier", "field_identifier") else None


def _real(nodes: Iterable[ts.Node]) -> list[ts.Node]:
    return [n for n in nodes if n.type != "comment"]


def _statements(node: ts.Node) -> list[ts.Node]:
    return list(node.named_children) if node.type == "compound_statement" else [node]


def _base_identifier(node: ts.Node | None) -> ts.Node | None:
    """``x`` of ``x``, ``x.a.b``, ``(x)``; None for anything that reads memory (``p->a``, ``a[i]``)."""
    while node is not None:
        if node.type == "identifier":
            return node
        if node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        elif node.type == "field_expression" and node.child_by_field_name("operator").type == ".":
            node = node.child_by_field_name("argument")
        else:
            return None
    return None


def _escapes(statement: ts.Node) -> list[ts.Node]:
    """Returns, gotos, and break/continue that leave ``statement`` (lambdas excluded)."""
    found = []
    stack = [statement]
    while stack:
        current = stack.pop()
        if current.type == "lambda_expression":
            continue
        if current.type in ("return_statement", "goto_statement"):
            found.append(current)
        elif current.type in ("break_statement", "continue_statement") and not _jumps_inside(current, statement):
            found.append(current)
        stack.extend(current.children)
    return found


def _jumps_inside(jump: ts.Node, statement: ts.Node) -> bool:
    current = jump.parent
    while current is not None:
        if current.type in (*_LOOPS, "for_range_loop") or (jump.type == "break_statement" and current.type == "switch_statement"):
            return True
        if _same(current, statement):
            return False
        current = current.parent
    return False


def _guard(statement: ts.Node) -> tuple[ts.Node, ts.Node | None] | None:
    """(condition, returned value or None) of ``if (cond) return [v];`` without else, or of
    ``if (cond) { work; return; }`` whose work leaves nowhere else (``guard_work``)."""
    if statement.type != "if_statement" or statement.child_by_field_name("alternative") is not None:
        return None
    then = statement.child_by_field_name("consequence")
    if then.type == "compound_statement":
        inner = _real(then.named_children)
        work = inner[:-1]
        if work and (any(_escapes(n) for n in work) or _real(inner[-1].named_children)):
            return None  # (work that may leave otherwise, or a value returned after work)
        then = inner[-1] if inner else None
    if then is None or then.type != "return_statement":
        return None
    condition = statement.child_by_field_name("condition")
    if condition.child_by_field_name("initializer") is not None or condition.child_by_field_name("value") is None:
        return None
    value = _real(then.named_children)
    return condition, (value[0] if value else None)


def guard_work(statement: ts.Node) -> tuple[int, int] | None:
    """The byte range of the work before a guard's ``return`` (``if (c) { mask(p); return; }``:
    ``mask(p);``, with the pragmas and comments among it), or None where the guard is the
    return alone."""
    then = statement.child_by_field_name("consequence")
    inner = list(then.named_children) if then.type == "compound_statement" else []
    last = next((n for n in reversed(inner) if n.type == "return_statement"), None)
    if last is None or not any(n.type != "comment" for n in inner if n.end_byte <= last.start_byte):
        return None
    return inner[0].start_byte, last.start_byte


def _indented(text: str, indent: str) -> str:
    """A statement's text with its first line at ``indent``, later lines keeping their shape."""
    first, *rest = text.splitlines() or [""]
    return "\n".join([indent + first, *(("  " + line) if line.strip() else line for line in rest)])


@lru_cache(maxsize=1024)
def _parameters(text: str) -> tuple[str, ...] | None:
    """Each parameter's declarator text of a function definition (None: cannot tell)."""
    definition = _function(parse(text.encode()).root_node)
    declarator = _function_declarator(definition) if definition is not None else None
    if declarator is None:
        return None
    params = declarator.child_by_field_name("parameters")
    if any(c.type == "..." or b"..." in c.text for c in params.children):
        return None  # C varargs or a parameter pack: any number of arguments, of any kind
    out = []
    for p in _real(params.named_children):
        target = p.child_by_field_name("declarator")
        out.append(target.text.decode() if target is not None else "")
    if len(out) == 1 and compact(params.text.decode()) == "(void)":
        return ()
    return tuple(out)
