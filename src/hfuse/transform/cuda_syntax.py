"""What CUDA constructs look like in a function's syntax tree: the built-in variables, block
barriers, cooperative groups (thread blocks, their syncs, grid groups, clusters) and shared
memory declarations. One definition of each, for the analysis and every rewrite."""
from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from ..frontend.parse import (compact, declarator_name, declares_function_pointer, hidden_by_local,
                              local_declaration, walk)
from ..frontend.model import Function
from ..frontend.resolve import LocalNames, Resolver

BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
SYNC_BUILTINS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")
NAMED_BARRIER_BUILTINS = ("__barrier_sync", "__barrier_sync_count")
"""CUDA's named barriers by id (``sm_30_intrinsics.h``): the ids and counts of the kernel's own block."""
CG_NAMESPACES = frozenset({"cg", "cooperative_groups", "::cooperative_groups"})
"""Spellings of cooperative groups when nothing better is known (see ``cg_spellings``)."""
GRID_GROUP_NAMES = ("this_grid", "grid_group", "this_multi_grid", "multi_grid_group")
GRID_QUERIES = frozenset({"size", "num_threads", "thread_rank", "thread_index", "dim_threads", "group_dim",
                          "dim_blocks", "num_blocks", "block_index", "block_rank"})
"""What a grid group tells of the launch (``grid.thread_rank()`` in a grid-stride loop): a part's
own grid and block answer it. Its other members (``sync``, ``is_valid``, arrive/wait, clusters)
need a cooperative launch of the kernel's own grid, which no fused kernel is."""
CLUSTER_NAMES = ("this_cluster", "cluster_group")


def calls_through_pointer(target: ts.Node, scope: tuple[str, ...], resolver: Resolver | None,
                          local: LocalNames) -> bool:
    """Whether a call's target (its ``function``) is a pointer to a function, whose value hfuse
    cannot see: ``(*fp)(x)``, ``fp[i](x)``, ``(*tbl[i])(x)``; ``op.f(x)`` where some class has a
    data member ``f`` that holds a function's address (by name: the object's type is not
    known here); ``op(x)`` where ``op`` is a parameter or local declared as one (``float
    (*op)(float)``, ``unary_op op``). ``(T)(x)`` is a C-style cast the grammar also reads as a
    call, and stays one."""
    if target.type == "parenthesized_expression":
        inner = target.named_children[0] if target.named_children else None
        return inner is not None and inner.type in ("pointer_expression", "subscript_expression", "field_expression")
    if target.type in ("pointer_expression", "subscript_expression"):
        return True
    if target.type == "field_expression":
        field_name = target.child_by_field_name("field")
        return resolver is not None and field_name is not None and field_name.text.decode() in resolver.pointer_fields
    declared = local_declaration(target) if target.type == "identifier" else None
    if declared is None:
        return False
    written = declared.child_by_field_name("type")
    return declares_function_pointer(declared) or resolver is not None and written is not None \
        and resolver.holds_function(scope, compact(written.text.decode()), local)


@dataclass(frozen=True)
class PointerCall:
    """A call through a pointer to a function (which function runs, hfuse cannot see)."""

    line: int
    arguments: int | None
    """How many arguments it passes; None where a pack expansion (``f(args...)``) hides it."""
    value_used: bool
    """Whether its value is used (``s += f(x)``): then no ``void`` function is the pointer's."""

    @classmethod
    def of(cls, call: ts.Node, line: int) -> "PointerCall":
        given = call.child_by_field_name("arguments")
        given = [a for a in given.named_children if a.type != "comment"] if given is not None else None
        count = None if given is None or any(a.type == "parameter_pack_expansion" for a in given) else len(given)
        parent = call.parent
        if parent is not None and parent.type in ("assignment_expression", "init_declarator"):
            used = parent.child_by_field_name("right" if parent.type == "assignment_expression" else "value") == call
        else:
            used = parent is not None and parent.type in _VALUE_PARENTS
        return cls(line, count, used)

    def may_run(self, function: Function) -> bool:
        """Whether the pointer may hold ``function``: a call through a pointer passes every
        parameter (no default argument fills one in), so only a function of as many parameters
        (or taking a pack or C's ``...``) can be its, and one returning ``void`` only where the
        value is not used."""
        head = function.text.split("{", 1)[0]
        if self.value_used and _returns_void(head, function.name):
            return False
        if self.arguments is None or "..." in head:
            return True
        return len([p for p in function.params if p.text.strip() != "void"]) == self.arguments


_VALUE_PARENTS = frozenset({"binary_expression", "argument_list", "subscript_expression", "subscript_argument_list",
                            "initializer_list"})
"""Where a call's value is used whatever the function (``return f()`` is not: a void function
may return a void call)."""
_SPECIFIERS = frozenset({"static", "inline", "constexpr", "extern", "__device__", "__host__", "__forceinline__",
                         "__noinline__", "__inline__"})


def _returns_void(head: str, name: str) -> bool:
    """Whether a definition's head (``static __device__ __forceinline__ void f(``) declares it
    to return ``void``: only where nothing but specifiers and ``void`` stand before the name."""
    before = re.split(rf"\b{re.escape(name)}\s*\(", re.sub(r"^\s*template\s*<.*?>\s*(?=[A-Za-z_])", "", head,
                                                            flags=re.S), maxsplit=1)[0]
    words = [w for w in re.findall(r"[^\s]+", before) if w not in _SPECIFIERS]
    return words == ["void"]


def another_instance(target: ts.Node | None) -> bool:
    """A call through template arguments that are not bare names (``unroll<N - 1>(p)``,
    ``Fact<N - 1>::get()``): another instance of a template, chosen when compiling, so a
    call of its own key from inside it is no recursion at run time."""
    arguments = []
    while target is not None:
        if target.type == "template_function":
            arguments.append(target.child_by_field_name("arguments"))
            target = target.child_by_field_name("name")
        elif target.type == "qualified_identifier":
            scope = target.child_by_field_name("scope")
            if scope is not None and scope.type == "template_type":
                arguments.append(scope.child_by_field_name("arguments"))
            target = target.child_by_field_name("name")
        else:
            break
    written = [a for node in arguments if node is not None for a in node.named_children if a.type != "comment"]
    return any(a.type not in ("type_descriptor", "identifier") or
               (a.type == "type_descriptor" and a.child_by_field_name("declarator") is not None) for a in written)


def called_name(call: ts.Node) -> str | None:
    """The plain name a call_expression calls (``f(x)``, ``f<T>(x)``, ``ns::f(x)``)."""
    fn = call.child_by_field_name("function")
    while fn is not None and fn.type in ("template_function", "qualified_identifier"):
        fn = fn.child_by_field_name("name")
    if fn is not None and fn.type == "identifier":
        return fn.text.decode()
    return None


def call_reference(call: ts.Node) -> str | None:
    """What a call names as written, template arguments dropped (``ns::f``, ``f``), or None
    for calls that name no function (``obj.f()``, ``(*p)(x)``, ``fs[i](x)``)."""
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "template_function":
        fn = fn.child_by_field_name("name")
    if fn is not None and fn.type in ("identifier", "qualified_identifier"):
        return compact(fn.text.decode())
    return None


UNQUALIFIED = ""
"""In a set of cooperative groups' spellings: a ``using namespace`` of it is in force, so its
free functions may be called by their names alone (``sync(block)``)."""


def cg_spellings(resolver: Resolver | None, scope: tuple[str, ...], local: LocalNames) -> frozenset[str]:
    """Every qualifier that names cooperative groups in a function: the namespace itself
    and any alias in force (``namespace g = cooperative_groups;``, file-scope or local), and
    ``UNQUALIFIED`` where a ``using namespace`` of it is."""
    if resolver is None:
        return CG_NAMESPACES
    names = {"cooperative_groups", "::cooperative_groups"}
    for (level, alias), target in resolver.aliases.items():
        if resolver.is_cooperative_groups(scope, alias, local):
            names.add(alias)
    names |= {alias for alias, target in local.aliases if target.lstrip(":").split("::")[0] == "cooperative_groups"}
    if resolver.nominates_cooperative_groups(scope, local):
        names.add(UNQUALIFIED)
    return frozenset(names)


def qualified_tail(node: ts.Node) -> tuple[str, str]:
    """(namespace text, last name) of a qualified_identifier or identifier."""
    text = compact(node.text.decode())
    head, _, tail = text.rpartition("::")
    return head, tail


def is_builtin_reference(node: ts.Node) -> bool:
    """An ``identifier`` node naming a CUDA built-in variable: not a field or type, nor a
    parameter or local of that name (``int flat(dim3 blockDim, ...)``) or a use of one."""
    return node.type == "identifier" and node.text.decode() in BUILTINS and not hidden_by_local(node)


def is_cg_block_call(node: ts.Node) -> bool:
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    return fn is not None and fn.type in ("identifier", "qualified_identifier") and qualified_tail(fn)[1] == "this_thread_block"


def is_cg_block_type(node: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> bool:
    if node.type == "type_identifier":
        inside_qualified = node.parent is not None and node.parent.type == "qualified_identifier"
        return node.text.decode() == "thread_block" and not inside_qualified
    if node.type == "qualified_identifier" and (node.parent is None or node.parent.type != "qualified_identifier"):
        head, tail = qualified_tail(node)
        return tail == "thread_block" and head in cg
    return False


def is_cg_grid_call(node: ts.Node) -> bool:
    """``this_grid()`` / ``cg::this_grid()``."""
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    return fn is not None and fn.type in ("identifier", "qualified_identifier") and qualified_tail(fn)[1] == "this_grid"


def is_cg_grid_type(node: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> bool:
    """``grid_group`` / ``cg::grid_group`` as a type (not the name inside a qualified one)."""
    if node.type == "type_identifier":
        inside_qualified = node.parent is not None and node.parent.type == "qualified_identifier"
        return node.text.decode() == "grid_group" and not inside_qualified
    if node.type == "qualified_identifier" and (node.parent is None or node.parent.type != "qualified_identifier"):
        head, tail = qualified_tail(node)
        return tail == "grid_group" and head in cg
    return False


def _grid_variables(root: ts.Node, cg: frozenset[str]) -> dict[str, ts.Node]:
    """Local variables that hold the grid group (``auto grid = cg::this_grid();``,
    ``cg::grid_group g = this_grid();``): name -> its declarator's name node."""
    names: dict[str, ts.Node] = {}
    for node in walk(root):
        if node.type != "declaration":
            continue
        type_node = node.child_by_field_name("type")
        by_type = type_node is not None and is_cg_grid_type(type_node, cg)
        for declarator in node.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
            name = declarator_name(declarator)
            if name is not None and value is not None and is_cg_grid_call(value) and (
                    by_type or (type_node is not None and type_node.text.decode() == "auto")):
                names[name.text.decode()] = name
    return names


def _is_grid_query(node: ts.Node) -> bool:
    """``node.thread_rank()`` and the other members of ``GRID_QUERIES``: ``node`` is the object."""
    member = node.parent
    if member is None or member.type != "field_expression" or member.child_by_field_name("argument") != node:
        return False
    field = member.child_by_field_name("field")
    call = member.parent
    return (field is not None and field.text.decode() in GRID_QUERIES and call is not None
            and call.type == "call_expression" and call.child_by_field_name("function") == member)


def grid_group_uses(root: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> tuple[list[ts.Node], list[ts.Node]]:
    """(queries, other uses) of cooperative groups' grid in a function. Queries are what a
    part's own grid answers: ``this_grid()`` and local grid variables used only as the object
    of a member of ``GRID_QUERIES``, and such variables' declarations. Anything else (``sync()``,
    a grid handed to a function, a multi-grid, an alias of the type) is another use."""
    variables = _grid_variables(root, cg)
    declared = {name.start_byte for name in variables.values()}
    queries: list[ts.Node] = []
    others: list[ts.Node] = []
    for node in walk(root):
        if is_cg_grid_call(node):
            parent = node.parent
            held = (parent is not None and parent.type == "init_declarator"
                    and (name := declarator_name(parent)) is not None and name.start_byte in declared)
            (queries if held or _is_grid_query(node) else others).append(node)
        elif is_cg_grid_type(node, cg):
            parent = node.parent
            held = parent is not None and parent.type == "declaration" and any(
                (name := declarator_name(d)) is not None and name.start_byte in declared
                for d in parent.children_by_field_name("declarator"))
            (queries if held else others).append(node)
        elif node.type == "identifier" and node.text.decode() in variables and node.start_byte not in declared:
            (queries if _is_grid_query(node) else others).append(node)
    within = [(q.start_byte, q.end_byte) for q in queries]
    for node in walk(root):  # a grid name in any other spelling (an alias's, a multi-grid) is another use
        if (node.type in ("identifier", "type_identifier", "field_identifier") and node.text.decode() in GRID_GROUP_NAMES
                and not any(lo <= node.start_byte < hi for lo, hi in within)
                and not any(o.start_byte <= node.start_byte < o.end_byte for o in others)):
            others.append(node)
    return queries, others


GRID_WIDE_USE = re.compile(r"\b(sync|barrier_\w+|is_valid|this_multi_grid|multi_grid_group)\b")
"""A use of the grid group that needs the grid's every block (a cooperative launch)."""


def grid_use_text(node: ts.Node) -> str:
    """How a use of the grid group reads in a refusal: the statement's expression around it
    (``grid.sync()``), or the name."""
    around = node
    while around.parent is not None and around.parent.type in ("field_expression", "call_expression",
                                                                   "qualified_identifier", "argument_list"):
        around = around.parent
    return compact(around.text.decode())[:60]


def _cg_function(node: ts.Node, cg: frozenset[str]) -> str | None:
    """The name of cooperative groups' free function a call calls (``cg::sync(g)``,
    ``cg::wait_prior<1>(g)``, any alias in ``cg``; ``sync(g)`` where ``UNQUALIFIED`` is in
    ``cg``), template arguments dropped. (A function of the program by that name is the
    caller's to rule out.)"""
    reference = call_reference(node) if node.type == "call_expression" else None
    if reference is None:
        return None
    head, _, tail = reference.split("<", 1)[0].rpartition("::")
    return tail.strip() if head in cg else None


def is_cg_sync_call(node: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> bool:
    """``cg::sync(g)`` / ``cooperative_groups::sync(g)`` (any alias in ``cg``)."""
    return _cg_function(node, cg) == "sync"


def is_cg_wait_call(node: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> bool:
    """``cg::wait(g)`` / ``cg::wait_prior<N>(g)``: they wait for the group's async copies, then
    call its ``sync()``, a barrier that stays as written (the part's block brings its own)."""
    return _cg_function(node, cg) in ("wait", "wait_prior")


def _storage_words(node: ts.Node) -> set[str]:
    return {c.text.decode() for c in node.named_children if c.type in ("storage_class_specifier", "type_qualifier")}


def is_extern_shared_declaration(node: ts.Node) -> bool:
    if node.type != "declaration":
        return False
    words = _storage_words(node)
    return "extern" in words and "__shared__" in words


def is_static_shared_declaration(node: ts.Node) -> bool:
    """``__shared__ float scratch[256];`` in a function: one variable per block, whichever
    part's threads run the function."""
    if node.type != "declaration":
        return False
    words = _storage_words(node)
    return "__shared__" in words and "extern" not in words


def cg_block_variables(root: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> set[str]:
    """Names declared as a cooperative-groups thread block (by type or by ``auto``)."""
    names: set[str] = set()
    for node in walk(root):
        if node.type not in ("declaration", "parameter_declaration"):
            continue
        type_node = node.child_by_field_name("type")
        by_type = type_node is not None and is_cg_block_type(type_node, cg)
        for declarator in node.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
            if by_type or (value is not None and is_cg_block_call(value)):
                name = declarator_name(declarator)
                if name is not None:
                    names.add(name.text.decode())
    return names


def declared_tile(call: ts.Node) -> str | None:
    """The variable ``auto t = tiled_partition<32>(block);`` declares, if the call initialises one."""
    parent = call.parent
    if parent is not None and parent.type == "init_declarator":
        name = parent.child_by_field_name("declarator")
        return name.text.decode() if name is not None and name.type == "identifier" else None
    if parent is not None and parent.type == "assignment_expression":
        # ``cg::thread_block_tile<32> tile = ...`` can parse as ``(a < 32 > tile) = ...``:
        # the variable is the last name on the left either way
        left = parent.child_by_field_name("left")
        names = [n for n in walk(left) if n.type == "identifier"] if left is not None else []
        return names[-1].text.decode() if names else None
    return None


def tile_argument_place(node: ts.Node, places: dict[str, str], block_vars: set[str]) -> str:
    """What an argument gives a tile parameter: a tile variable's place (``tile_places``),
    ``block`` or ``sub`` for a ``tiled_partition`` written in place, ``other`` for anything else."""
    if node.type == "identifier":
        return places.get(node.text.decode(), "other")
    if node.type == "call_expression" and called_name(node) == "tiled_partition":
        return _cut_from(node, places, block_vars)
    return "other"


def _cut_from(call: ts.Node, places: dict[str, str], block_vars: set[str]) -> str:
    args = call.child_by_field_name("arguments")
    parent = args.named_children[0] if args is not None and args.named_children else None
    if parent is None:
        return "other"
    if (parent.type == "identifier" and parent.text.decode() in block_vars) or is_cg_block_call(parent):
        return "block"
    held = parent.type == "identifier" and places.get(parent.text.decode()) in ("block", "sub", "param")
    return "sub" if held else "other"


def tile_places(root: ts.Node, block_vars: set[str]) -> dict[str, str]:
    """Where each tile variable of a function comes from, which tells what its
    ``meta_group_rank()`` counts: ``block`` (cut from the thread block: the block's tiles,
    which fusion moves), ``sub`` (cut from a tile: its parent's tiles, which it does not),
    ``param`` (a parameter: what its callers give it) or ``other`` (a copy, anything else)."""
    places: dict[str, str] = {}
    for node in walk(root):
        if node.type == "parameter_declaration":
            type_node = node.child_by_field_name("type")
            declarator = node.child_by_field_name("declarator")
            if (type_node is not None and "thread_block_tile" in type_node.text.decode() and declarator is not None
                    and (name := declarator_name(declarator)) is not None):
                places[name.text.decode()] = "param"
        elif node.type == "call_expression" and called_name(node) == "tiled_partition":
            if (declared := declared_tile(node)) is not None:
                places[declared] = _cut_from(node, places, block_vars)
        elif node.type == "declaration":
            type_node = node.child_by_field_name("type")
            if type_node is not None and "thread_block_tile" in type_node.text.decode():
                for declarator in node.children_by_field_name("declarator"):
                    value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
                    name = declarator_name(declarator)
                    if name is not None and not (value is not None and value.type == "call_expression"
                                                 and called_name(value) == "tiled_partition"):
                        places.setdefault(name.text.decode(), "other")
    return places


def is_block_sync_call(node: ts.Node, block_vars: set[str]) -> bool:
    """``b.sync()`` (or the wait of the split barrier, ``b.barrier_wait(std::move(t))``) on a
    thread block variable, or ``this_thread_block().sync()``."""
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    if fn is None or fn.type != "field_expression":
        return False
    member, target = fn.child_by_field_name("field"), fn.child_by_field_name("argument")
    if member is None or member.text.decode() not in ("sync", "barrier_wait") or target is None:
        return False
    return (target.type == "identifier" and target.text.decode() in block_vars) or is_cg_block_call(target)


_GROUP_FUNCTIONS = ("sync", "tiled_partition", "thread_rank", "group_size", "num_threads")
"""Cooperative groups' free functions a part's thread block may be given: ``sync`` is its
barrier and ``tiled_partition`` its tiles (``cooperative_groups.py``); the others call the
group's own members, which the part's block has."""

_BLOCK_ASYNC_COPIES = {"memcpy_async": ("cg", "cuda"), "wait": ("cg",), "wait_prior": ("cg",),
                       "make_pipeline": ("cuda",)}
"""Async copies of the headers that take a part's thread block as they take the block:
cooperative groups' ``memcpy_async``/``wait``/``wait_prior<N>`` and libcu++'s
``cuda::memcpy_async`` are templates over the group that spread the copy by its
``thread_rank()`` and ``size()`` (``cp.async`` per thread) and wait with its ``sync()``;
``cuda::make_pipeline`` sizes the pipeline's barriers by ``size()``, lets ``thread_rank() == 0``
initialise them and meets the group at ``sync()``: all members the part's block has (the
preamble lets cooperative groups take that type)."""


def is_block_async_copy(node: ts.Node, cg: frozenset[str] = CG_NAMESPACES) -> bool:
    """``cg::memcpy_async(block, ...)``, ``cg::wait(block)``, ``cg::wait_prior<1>(block)``,
    ``cuda::memcpy_async(block, ..., barrier)``, ``cuda::make_pipeline(block, &state)``, or the
    same unqualified (a ``using namespace`` of either): see ``_BLOCK_ASYNC_COPIES``."""
    reference = call_reference(node) if node.type == "call_expression" else None
    if reference is None:
        return False
    head, _, name = reference.split("<", 1)[0].rpartition("::")
    owners = _BLOCK_ASYNC_COPIES.get(name.strip(), ())
    return (not head or ("cg" in owners and head in cg)
            or ("cuda" in owners and head in ("cuda", "::cuda"))) and bool(owners)


def library_block_collective(node: ts.Node, block_vars: set[str], cg: frozenset[str] = CG_NAMESPACES) -> str | None:
    """The name a call gives a thread block to, as written, when that may be a collective of
    the CUDA headers over the whole block (``cg::invoke_one(block, f)``); None for any other
    call, for ``sync(block)`` (a barrier hfuse rewrites, however qualified), the group functions
    of ``_GROUP_FUNCTIONS``, the async copies of ``_BLOCK_ASYNC_COPIES`` and member calls
    (``block.sync()``)."""
    if node.type != "call_expression" or called_name(node) in _GROUP_FUNCTIONS or is_block_async_copy(node, cg):
        return None
    fn = node.child_by_field_name("function")
    if fn is None or fn.type not in ("identifier", "qualified_identifier", "template_function"):
        return None
    return compact(fn.text.decode()) if gives_the_block(node, block_vars) else None


def gives_the_block(call: ts.Node, block_vars: set[str]) -> bool:
    """Whether a call is given a thread block: a variable of ``block_vars`` or ``this_thread_block()``."""
    args = call.child_by_field_name("arguments")
    return args is not None and any((a.type == "identifier" and a.text.decode() in block_vars) or is_cg_block_call(a)
                                    for a in args.named_children)
