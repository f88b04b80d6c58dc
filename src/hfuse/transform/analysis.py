"""What each function does that fusion must care about.

Facts are read off the syntax tree of one function: which CUDA built-ins it reads,
which barriers it executes, whether it uses cooperative groups, dynamic shared memory,
grid-wide sync, and which functions it calls. ``ProgramFacts`` closes them over the call
graph (a helper that calls a helper that reads ``threadIdx`` reads it too).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.extract import declarator_name
from ..frontend.model import Function
from ..frontend.parse import line_of, parse, walk

BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
SYNC_BUILTINS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")
CG_NAMESPACES = ("cg", "cooperative_groups")
GRID_GROUP_NAMES = ("this_grid", "grid_group", "this_multi_grid", "multi_grid_group", "this_cluster", "cluster_group")


def called_name(call: ts.Node) -> str | None:
    """The plain name a call_expression calls (``f(x)``, ``f<T>(x)``, ``ns::f(x)``)."""
    fn = call.child_by_field_name("function")
    while fn is not None and fn.type in ("template_function", "qualified_identifier"):
        fn = fn.child_by_field_name("name")
    if fn is not None and fn.type == "identifier":
        return fn.text.decode()
    return None


def qualified_tail(node: ts.Node) -> tuple[str, str]:
    """(namespace text, last name) of a qualified_identifier or identifier."""
    text = node.text.decode().replace(" ", "")
    head, _, tail = text.rpartition("::")
    return head, tail


def is_builtin_reference(node: ts.Node) -> bool:
    """An ``identifier`` node naming a CUDA built-in variable (not a field or type)."""
    return node.type == "identifier" and node.text.decode() in BUILTINS


def is_cg_block_call(node: ts.Node) -> bool:
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    return fn is not None and fn.type in ("identifier", "qualified_identifier") and qualified_tail(fn)[1] == "this_thread_block"


def is_cg_block_type(node: ts.Node) -> bool:
    if node.type == "type_identifier":
        inside_qualified = node.parent is not None and node.parent.type == "qualified_identifier"
        return node.text.decode() == "thread_block" and not inside_qualified
    if node.type == "qualified_identifier" and (node.parent is None or node.parent.type != "qualified_identifier"):
        head, tail = qualified_tail(node)
        return tail == "thread_block" and head.split("::")[-1] in CG_NAMESPACES
    return False


def is_cg_sync_call(node: ts.Node) -> bool:
    """``cg::sync(g)`` / ``cooperative_groups::sync(g)``."""
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    if fn is None or fn.type != "qualified_identifier":
        return False
    head, tail = qualified_tail(fn)
    return tail == "sync" and head.split("::")[-1] in CG_NAMESPACES


def is_extern_shared_declaration(node: ts.Node) -> bool:
    if node.type != "declaration":
        return False
    words = {c.text.decode() for c in node.named_children if c.type in ("storage_class_specifier", "type_qualifier")}
    return "extern" in words and "__shared__" in words


@dataclass
class FunctionFacts:
    function: Function
    builtins: list[tuple[str, int]] = field(default_factory=list)
    barriers: list[tuple[str, int]] = field(default_factory=list)
    cg_block: list[int] = field(default_factory=list)
    grid_sync: list[tuple[str, int]] = field(default_factory=list)
    dyn_smem: list[int] = field(default_factory=list)
    extern_shared_uses: list[tuple[str, int]] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)

    @property
    def direct_context(self) -> bool:
        """Reads something that differs between the fused and the original kernel."""
        return bool(self.builtins or self.barriers or self.cg_block or self.dyn_smem or self.extern_shared_uses)


def analyze(function: Function, extern_shared: set[str]) -> FunctionFacts:
    facts = FunctionFacts(function)
    tree = parse(function.text.encode())
    base = function.line - 1
    for node in walk(tree.root_node):
        line = base + line_of(node)
        if is_builtin_reference(node):
            facts.builtins.append((node.text.decode(), line))
        elif node.type == "identifier" and node.text.decode() in extern_shared:
            facts.extern_shared_uses.append((node.text.decode(), line))
        elif node.type == "call_expression":
            name = called_name(node)
            if name in SYNC_BUILTINS:
                facts.barriers.append((name, line))
            elif is_cg_sync_call(node):
                facts.barriers.append(("cg::sync", line))
            elif name is not None:
                facts.calls.add(name)
            if is_cg_block_call(node):
                facts.cg_block.append(line)
        elif is_cg_block_type(node):
            facts.cg_block.append(line)
        elif is_extern_shared_declaration(node):
            facts.dyn_smem.append(line)
        if node.type in ("identifier", "type_identifier", "field_identifier") and node.text.decode() in GRID_GROUP_NAMES:
            facts.grid_sync.append((node.text.decode(), line))
    block_vars = cg_block_variables(tree.root_node)
    for node in walk(tree.root_node):
        if is_block_sync_call(node, block_vars):
            facts.barriers.append(("thread_block::sync", base + line_of(node)))
    return facts


def cg_block_variables(root: ts.Node) -> set[str]:
    """Names declared as a cooperative-groups thread block (by type or by ``auto``)."""
    names: set[str] = set()
    for node in walk(root):
        if node.type not in ("declaration", "parameter_declaration"):
            continue
        type_node = node.child_by_field_name("type")
        by_type = type_node is not None and is_cg_block_type(type_node)
        for declarator in node.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
            if by_type or (value is not None and is_cg_block_call(value)):
                name = declarator_name(declarator)
                if name is not None:
                    names.add(name.text.decode())
    return names


def is_block_sync_call(node: ts.Node, block_vars: set[str]) -> bool:
    """``b.sync()`` on a thread block variable, or ``this_thread_block().sync()``."""
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    if fn is None or fn.type != "field_expression":
        return False
    member, target = fn.child_by_field_name("field"), fn.child_by_field_name("argument")
    if member is None or member.text.decode() != "sync" or target is None:
        return False
    return (target.type == "identifier" and target.text.decode() in block_vars) or is_cg_block_call(target)


@dataclass
class ProgramFacts:
    """Facts closed over the call graph of the functions one kernel reaches."""

    facts: dict[str, list[FunctionFacts]]
    needs_context: set[str]
    """Helpers that must be specialised per fused part (they read built-ins, ...)."""
    has_barrier: set[str]
    """Functions that (transitively) execute a block barrier."""

    def reachable(self, root: str) -> list[str]:
        seen: list[str] = []
        stack = [root]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.facts:
                continue
            seen.append(name)
            for f in self.facts[name]:
                stack.extend(sorted(f.calls))
        return seen


def close_over_calls(functions: dict[str, list[Function]], extern_shared: set[str]) -> ProgramFacts:
    facts = {name: [analyze(f, extern_shared) for f in fs] for name, fs in functions.items()}
    needs = {n for n, fs in facts.items() if any(f.direct_context for f in fs)}
    barrier = {n for n, fs in facts.items() if any(f.barriers for f in fs)}
    changed = True
    while changed:
        changed = False
        for name, fs in facts.items():
            calls = set().union(*(f.calls for f in fs)) & facts.keys()
            if name not in needs and calls & needs:
                needs.add(name)
                changed = True
            if name not in barrier and calls & barrier:
                barrier.add(name)
                changed = True
    return ProgramFacts(facts, needs, barrier)


def check_kernel(kernel: Function, program: ProgramFacts) -> None:
    """Refuse what cannot be fused: recursion and grid-wide synchronisation."""
    _check_recursion(kernel.name, program, [kernel.name], kernel)
    for name in program.reachable(kernel.name):
        for f in program.facts[name]:
            if f.grid_sync:
                what, line = f.grid_sync[0]
                raise HFuseError(
                    f"uses grid-wide cooperative groups ('{what}'), which needs every block of the grid "
                    "resident and cannot be split between fused kernels",
                    Location(f.function.file, line, kernel.name),
                    hint="fuse only kernels that synchronise at most within a block",
                )


def _check_recursion(name: str, program: ProgramFacts, path: list[str], kernel: Function) -> None:
    for f in program.facts.get(name, []):
        for callee in sorted(f.calls & program.facts.keys()):
            if callee in path:
                cycle = " -> ".join(path[path.index(callee) :] + [callee])
                raise HFuseError(
                    f"recursion is not supported ({cycle})",
                    Location(f.function.file, f.function.line, kernel.name),
                    hint="fused kernels are built by inlining every helper; rewrite the recursion as a loop",
                )
            _check_recursion(callee, program, path + [callee], kernel)
