"""What each function does that fusion must care about.

Facts are read off the syntax tree of one function: which CUDA built-ins it reads,
which barriers it executes, whether it uses cooperative groups, dynamic shared memory,
grid-wide sync, and which functions it calls. ``ProgramFacts`` closes them over the call
graph (a helper that calls a helper that reads ``threadIdx`` reads it too).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.model import (BLOCK_SYNC, OWN_BLOCK_READS, PTX_CLUSTER, PTX_ENDS_THREAD, PTX_REGISTERS, PTX_WARPGROUP,
                              REGISTERS_SET, THREAD_INDEX_READS, WARPGROUP_RUN, WHOLE_BLOCK_READS, Function,
                              TopLevelItem, ptx_block_reads, qualify)
from ..frontend.parse import (compact, declarator_name, hidden_by_local, in_default_argument, line_of,
                              names_a_value, parse, walk)
from ..frontend.program import is_prototype
from ..frontend.resolve import LocalNames, Resolver
from .cuda_syntax import (CG_NAMESPACES, CLUSTER_NAMES, GRID_WIDE_USE, NAMED_BARRIER_BUILTINS, SYNC_BUILTINS,
                          PointerCall, another_instance, call_reference, called_name, calls_through_pointer,
                          cg_block_variables, cg_spellings, gives_the_block, grid_group_uses, grid_use_text,
                          is_block_sync_call, library_block_collective, is_builtin_reference, is_cg_block_call,
                          is_cg_block_type, is_cg_sync_call, is_cg_wait_call, is_extern_shared_declaration,
                          is_static_shared_declaration, tile_places)
from .opaque import REFUSAL_HINT, OpaqueNames
from .recursion import check_recursion
from .template_parameters import locals_of_type_parameters, through_template_parameter, type_parameters_of
from .tile_ranks import TileArgument, check_tile_parameters, member_callee, ranked_tiles, tile_arguments

BY_ARGUMENTS = "by argument-dependent lookup"
"""How a call's ``other_candidates`` came (``FunctionFacts``): its arguments' namespaces."""


@dataclass
class FunctionFacts:
    function: Function
    builtins: list[tuple[str, int]] = field(default_factory=list)
    barriers: list[tuple[str, int]] = field(default_factory=list)
    cg_block: list[int] = field(default_factory=list)
    cg_grid: list[int] = field(default_factory=list)
    """Lines where it asks cooperative groups' grid for ranks and sizes (a part's own grid answers)."""
    tile_ranks: list[int] = field(default_factory=list)
    """Lines asking a tile its place among the block's tiles (``meta_group_rank()``): the part's differs."""
    ranked_tile_params: list[tuple[int, int, str]] = field(default_factory=list)
    """Of those, asked of a tile parameter: (its index, line, the call as written)."""
    tile_arguments: list[TileArgument] = field(default_factory=list)
    """What each call gives its callee's parameters, as far as tiles go (``tile_ranks.py``)."""
    grid_sync: list[tuple[str, int]] = field(default_factory=list)
    """What else it does with the grid group (``grid.sync()``): (the use as written, line)."""
    cluster: list[tuple[str, int]] = field(default_factory=list)
    """What makes its blocks a thread block cluster, or works on one (what, line)."""
    dyn_smem: list[int] = field(default_factory=list)
    static_shared: list[int] = field(default_factory=list)
    """Lines of its static ``__shared__`` variables: two parts calling one copy would share them."""
    extern_shared_uses: list[tuple[str, int]] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    """Qualified keys of the program's functions it calls."""
    instance_calls: set[str] = field(default_factory=set)
    """Of ``calls``, those called as another instance of a template (``f<N - 1>``)."""
    plain_calls: set[str] = field(default_factory=set)
    """Of ``calls``, those called as written without such arguments."""
    opaque: list[tuple[str, int, str]] = field(default_factory=list)
    """What may touch the block in a way hfuse cannot see (why, line, what the user can do)."""
    whole_block: list[tuple[str, int]] = field(default_factory=list)
    """What reads the block where hfuse cannot see, correct only where a fused block runs one
    whole block of the kernel (why, line; see opaque.py)."""
    own_block: list[tuple[str, int]] = field(default_factory=list)
    """Of ``whole_block``, what also reads ``blockDim`` where hfuse cannot rewrite it: correct only
    where the fused block is exactly the kernel's own (why, line)."""
    raw_thread_index: list[tuple[str, int]] = field(default_factory=list)
    """Of ``whole_block``, what reads the thread's index (``threadIdx``, ``%tid``) where hfuse
    cannot rewrite it: correct only in a 1-D block (why, line)."""
    indirect_calls: list[PointerCall] = field(default_factory=list)
    """Calls through a pointer (which function runs is unknown)."""
    function_values: list[tuple[str, int]] = field(default_factory=list)
    """The program's functions it uses as values, not calls (``&f``, ``g(f)``, ``apply<f>``):
    (key, line). Through such a value no part's copy of a function can be reached."""
    unseen_bases: list[tuple[str, str, int]] = field(default_factory=list)
    """Unqualified calls in a member function of a class with a base no input defines, which
    may have a member of that name that C++ calls instead: (the key hfuse found, the base, line)."""
    other_candidates: list[tuple[str, tuple[str, ...], int, str]] = field(default_factory=list)
    """Unqualified calls that resolve to one function while C++ may choose another: one of
    that name in another namespace, by argument-dependent lookup (how: ``BY_ARGUMENTS``), or
    one a using-declaration brings beside it: (the key resolved, the other keys, line, how)."""
    parameter_calls: list[tuple[str, int]] = field(default_factory=list)
    """Calls through its own template parameters: ``f(x)``, ``f.apply(x)`` or ``F::apply(x)``
    with ``f`` a parameter or local of type ``F``, and ``ACT_FN(x)`` of a non-type one: (the
    parameter, line). What runs is what an instance gives it, which hfuse sees only where the
    kernel's template arguments are given."""
    outside_calls: list[tuple[str, int]] = field(default_factory=list)
    """Qualified calls of functions no input defines (a kept header's), as written: (name,
    line). Clang says what they read; where it could not read the file, nobody did."""
    macro_like: list[tuple[str, int]] = field(default_factory=list)
    """Calls of an all-capitals name nothing the user wrote defines (``WARP_SHFL_XOR(v, 1)``),
    each refused in ``opaque`` as a macro nobody defined: (name, line). Where Clang finds the
    name declared by a kept header (PyTorch's ``WARP_SHFL_XOR`` is a function template), it
    is no macro, and what it reads of the block is Clang's finding (``header_reads.py``)."""
    cg: frozenset[str] = CG_NAMESPACES

    @property
    def direct_context(self) -> bool:
        """Reads something that differs between the fused and the original kernel."""
        return bool(self.builtins or self.barriers or self.cg_block or self.cg_grid or self.tile_ranks or self.dyn_smem
                    or self.extern_shared_uses or self.static_shared)


# Inline PTX that reads the hardware's view of the block or synchronises it.
# A call spelled like a macro (``SYNC_ALL()``) that nothing defines: after preprocessing with the
# user's -D/-I it can only be a macro hfuse never saw, which may hide a barrier or threadIdx.
_MACRO_LIKE = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
MACRO_SUSPICION = "'{}(...)' looks like a macro that no -D and no header hfuse read defines"
"""The refusal of a call ``facts.macro_like`` records (its name filled in)."""
_MACRO_HINT = "pass the -D or -I that defines it, as for nvcc, so hfuse can see what it expands to"


def _local_type_names(root: ts.Node) -> frozenset[str]:
    """Types a function declares itself (``using WR = ...;``, ``typedef ... WR;``): a call
    ``WR(t)`` constructs one, it is no macro."""
    names = set()
    for node in walk(root):
        if node.type == "alias_declaration" and (name := node.child_by_field_name("name")) is not None:
            names.add(name.text.decode())
        elif node.type == "type_definition":
            names.update(n.text.decode() for d in node.children_by_field_name("declarator") if (n := declarator_name(d)))
    return frozenset(names)


def _local_using_declarations(root: ts.Node) -> dict[str, str]:
    """``using X::name;`` inside a function: name -> what it brings in, as written."""
    found = {}
    for node in walk(root):
        if node.type == "using_declaration" and not any(c.type == "namespace" for c in node.children) and node.named_children:
            target = compact(node.named_children[-1].text.decode())
            found[target.split("::")[-1]] = target
    return found


def analyze(
    function: Function, extern_shared: set[str], resolver: Resolver | None = None, known: set[str] | None = None,
    opaque: OpaqueNames | None = None,
) -> FunctionFacts:
    """The facts of one function; calls are resolved against ``known`` function keys.
    ``opaque``: what of the program reaches code hfuse cannot rewrite (see opaque.py)."""
    tree = parse(function.text.encode())
    local = LocalNames.of(tree.root_node) if resolver is not None else LocalNames()
    cg = cg_spellings(resolver, function.scope, local)
    facts = FunctionFacts(function, cg=cg)
    base = function.line - 1
    opaque = opaque or OpaqueNames(resolver or Resolver(), {}, {})
    local_usings = _local_using_declarations(tree.root_node)
    local_types = _local_type_names(tree.root_node)
    type_parameters = type_parameters_of(function)
    typed_locals = locals_of_type_parameters(tree.root_node, type_parameters)
    block_vars = cg_block_variables(tree.root_node, cg)
    places = tile_places(tree.root_node, block_vars)
    params = {p.name: i for i, p in enumerate(function.params) if p.name}
    for target, call in ranked_tiles(tree.root_node):
        facts.tile_ranks.append(base + line_of(call))
        if places.get(target) == "param" and target in params:
            facts.ranked_tile_params.append((params[target], base + line_of(call), compact(call.text.decode())))
    for node in walk(tree.root_node):
        line = base + line_of(node)
        if is_builtin_reference(node):
            facts.builtins.append((node.text.decode(), line))
            if in_default_argument(node):
                facts.opaque.append((f"a default argument reads {node.text.decode()}: the callers' part cannot "
                                     "give it its view of the block", line,
                                     "pass the value at each call instead, or keep this kernel unfused"))
        elif node.type == "identifier" and node.text.decode() in extern_shared:
            facts.extern_shared_uses.append((node.text.decode(), line))
        elif node.type == "call_expression":
            if (through := through_template_parameter(node, function, type_parameters, typed_locals)) is not None:
                facts.parameter_calls.append((through, line))
            name = called_name(node)
            if name in NAMED_BARRIER_BUILTINS:
                facts.whole_block.append((f"'{name}' waits at one of the block's named barriers by its id, which in "
                                          "a shared block are the fused kernel's (each part has barriers of its own)",
                                          line))
            if name in SYNC_BUILTINS:
                facts.barriers.append((name, line))
            elif (is_cg_sync_call(node, cg) or is_cg_wait_call(node, cg)) and (  # not the program's own 'sync(x)'
                    gives_the_block(node, block_vars) or not (known and resolver is not None and resolver.resolve(
                        function.scope, call_reference(node), local, known))):
                facts.barriers.append((f"cg::{called_name(node)}", line))
            else:
                callee = _record_call(node, function, facts, line, resolver, known, local, local_types)
                if (callee := callee or member_callee(node)) is not None:
                    facts.tile_arguments.extend(tile_arguments(callee, node, function, places, block_vars, line))
            if is_cg_block_call(node):
                facts.cg_block.append(line)
        elif is_cg_block_type(node, cg):
            facts.cg_block.append(line)
        elif is_extern_shared_declaration(node):
            facts.dyn_smem.append(line)
        elif is_static_shared_declaration(node):
            facts.static_shared.append(line)
        elif node.type in ("gnu_asm_expression", "asm_statement") and PTX_CLUSTER.search(node.text.decode()):
            facts.cluster.append(("inline PTX on the thread block cluster", line))
        elif node.type in ("gnu_asm_expression", "asm_statement") and (reads := ptx_block_reads(node.text.decode())):
            _record_ptx_reads(facts, reads, line)
        elif node.type in ("gnu_asm_expression", "asm_statement") and PTX_REGISTERS.search(node.text.decode()):
            facts.opaque.append((f"inline PTX that {REGISTERS_SET}: it assumes the kernel's own launch and warpgroups, "
                                 "and in a fused block it may wait forever for registers other parts hold", line,
                                 "leave register budgets to hfuse (hfuse tune sets per-part budgets), or keep this kernel unfused"))
        elif node.type in ("gnu_asm_expression", "asm_statement") and PTX_ENDS_THREAD.search(node.text.decode()):
            facts.opaque.append(("inline PTX that ends the thread (exit/ret): fused, the thread would skip what runs "
                                 "after its part and leave its part's barriers short", line,
                                 "return from the kernel in C++ instead, or keep this kernel unfused"))
        if node.type in ("gnu_asm_expression", "asm_statement") and PTX_WARPGROUP.search(node.text.decode()):
            facts.whole_block.append((f"inline PTX that {WARPGROUP_RUN}: four warps aligned to the block's start, "
                                      "which only a part at the fused block's first thread keeps", line))
        if resolver is not None and known and names_a_value(node) and not hidden_by_local(node):
            key = resolver.resolve(function.scope, compact(node.text.decode()), local, known)
            if key is not None:
                facts.function_values.append((key, line))
        if node.type in ("qualified_identifier", "type_identifier", "identifier", "namespace_identifier") and (
                node.parent is None or node.parent.type != "qualified_identifier"):
            found = opaque.reason(function.scope, node.text.decode(), local, local_usings,
                                  unqualified=node.type != "qualified_identifier")
            if found is not None and found.whole_block:
                facts.whole_block.append((found.why, line))
            elif found is not None:
                facts.opaque.append((found.why, line, REFUSAL_HINT))
        if node.type in ("identifier", "type_identifier", "field_identifier") and node.text.decode() in CLUSTER_NAMES:
            facts.cluster.append((f"'{node.text.decode()}'", line))
    if function.cluster_dims is not None:
        facts.cluster.insert(0, (f"__cluster_dims__({function.cluster_dims})", function.line))
    facts.opaque.sort(key=lambda found: found[2] == _MACRO_HINT)  # what a name is known to mean comes first
    grid_queries, grid_others = grid_group_uses(tree.root_node, cg)
    facts.cg_grid.extend(base + line_of(node) for node in grid_queries)
    facts.grid_sync.extend((grid_use_text(node), base + line_of(node)) for node in grid_others)
    library_collectives = []
    for node in walk(tree.root_node):
        if is_block_sync_call(node, block_vars):
            facts.barriers.append(("thread_block::sync", base + line_of(node)))
        elif (library := library_block_collective(node, block_vars, cg)) is not None and not (
                known and resolver is not None and resolver.resolve(function.scope, library, local, known)):
            library_collectives.append((
                f"'{library}' is given the thread block: a collective of the CUDA headers over the whole block "
                "(it counts and synchronises the block's threads inside the headers, which hfuse does not rewrite)",
                base + line_of(node), "keep this kernel unfused (a part's thread block is its own threads, which "
                "the headers' collectives do not take)"))
    facts.opaque[:0] = library_collectives
    return facts


def _record_ptx_reads(facts: FunctionFacts, reads: list[str], line: int) -> None:
    """Inline PTX that synchronises the block by barrier id or reads its special registers:
    as the kernel saw it where a fused block runs one whole block of it on its first threads
    (``%ntid``: and is exactly its block); ``%ctaid`` and the shared memory sizes nowhere."""
    why = "inline PTX that " + ", ".join(reads).replace(BLOCK_SYNC, f"{BLOCK_SYNC} by barrier id")
    if set(reads) <= WHOLE_BLOCK_READS | OWN_BLOCK_READS:
        facts.whole_block.append((f"{why}: in a shared block its barrier ids and registers would be the fused "
                                  "kernel's (each part has barriers and threads of its own)", line))
        if set(reads) & OWN_BLOCK_READS:
            facts.own_block.append((why, line))
        if set(reads) & THREAD_INDEX_READS:
            facts.raw_thread_index.append((why, line))
    else:
        facts.opaque.append((f"{why}: no fused layout keeps that as the kernel saw it", line,
                             "use threadIdx/blockDim/blockIdx instead of the PTX, or keep this kernel unfused"))


def _record_call(
    node: ts.Node, function: Function, facts: FunctionFacts, line: int, resolver: Resolver | None,
    known: set[str] | None, local: LocalNames, local_types: frozenset[str] = frozenset(),
) -> str | None:
    """Records a call in ``facts``; the key of the program's function it calls, if any."""
    reference = call_reference(node)
    target = node.child_by_field_name("function")
    if target is not None and (reference is None or target.type == "identifier" and hidden_by_local(target)):
        # (a local's name: a lambda, functor or pointer of its own, not the program's function of that name)
        if calls_through_pointer(target, function.scope, resolver, local):
            facts.indirect_calls.append(PointerCall.of(node, line))
        return
    if reference is None:
        return
    key = reference.split("::")[-1] if resolver is None else resolver.resolve(function.scope, reference, local, known)
    own_member = False
    if function.owner and "::" not in reference and known:
        # in a member function, a member of its class or of a base hides a namespace's function of that name
        simple = reference.split("<")[0].strip()
        member, unseen = (resolver.member(function.scope, function.owner, simple, known) if resolver is not None
                          else (qualify(function.scope, f"{function.owner}::{simple}"), None))
        if member in known:
            key, own_member = member, True
        elif member is not None and resolver is not None:
            if simple in resolver.pointer_fields:
                facts.indirect_calls.append(PointerCall.of(node, line))
            return  # a data member (a functor, a pointer): what it calls is its type's, not a namespace's function
        elif unseen is not None and key is not None:
            facts.unseen_bases.append((key, unseen, line))
    args = node.child_by_field_name("arguments")
    friends = resolver.hidden_friends.get(reference.split("<")[0].strip(), set()) if resolver is not None else set()
    if key is None and friends and "::" not in reference and args is not None and args.named_children:
        key = min(friends)  # only argument-dependent lookup finds a hidden friend: the call may well be its
    if key is not None:
        facts.calls.add(key)
        # (a class member found by ordinary lookup: C++ does no argument-dependent lookup)
        if resolver is not None and known and "::" not in reference and not own_member and args is not None \
                and args.named_children:
            simple = reference.split("<")[0].strip()
            others = tuple(sorted(k for k in known if k != key and k.rsplit("::", 1)[-1] == simple
                                  and ((k.rsplit("::", 1)[0] if "::" in k else "") in resolver.type_namespaces
                                       or k in friends)))
            if others:
                facts.other_candidates.append((key, others, line, BY_ARGUMENTS))
            if brought := tuple(sorted(resolver.brought_alike(function.scope, simple, known) - {key})):
                facts.other_candidates.append((key, brought, line, "through a using-declaration beside it"))
        if another_instance(target):
            facts.instance_calls.add(key)
        else:
            facts.plain_calls.add(key)
        return key
    if resolver is not None and resolver.resolve(function.scope, reference, local, resolver.pointer_variables):
        facts.indirect_calls.append(PointerCall.of(node, line))  # a variable of the program's that holds a function
        return None
    if "::" in reference:
        facts.outside_calls.append((reference, line))
    if (elsewhere := resolver.resolve(function.scope, reference, local)) in resolver.undefined_device_functions:
        facts.opaque.append((f"'{elsewhere}' is declared but no input defines it (separate compilation): what it "
                             "reads of the block is unknown", line,
                             "give hfuse its definition (in a header the file includes, or with -include), or keep "
                             "this kernel unfused"))
    elif (elsewhere is None and _MACRO_LIKE.match(reference.split("::")[-1]) and reference not in local_types
          and reference not in resolver.value_macros  # (a declared type, ``BR<128>(tmp)``, is no macro)
          and reference not in _template_parameters(function, resolver)):
        facts.opaque.append((MACRO_SUSPICION.format(reference), line, _MACRO_HINT))
        facts.macro_like.append((reference, line))


def _template_parameters(function: Function, resolver: Resolver) -> frozenset[str]:
    """The template parameters ``function`` sees, its own and its class's: a call of one
    (``ACT_FN(x)`` with ``template <T (*ACT_FN)(const T&)>``) goes to what the instance passes."""
    owner = resolver.class_template_params.get(qualify(function.scope, function.owner), frozenset()) \
        if function.owner else frozenset()
    return frozenset(function.template_params) | owner


@dataclass
class ProgramFacts:
    """Facts closed over the call graph of the functions one kernel reaches."""

    facts: dict[str, list[FunctionFacts]]
    needs_context: set[str]
    """Helpers that must be specialised per fused part (they read built-ins, ...)."""
    has_barrier: set[str]
    """Functions that (transitively) execute a block barrier."""
    early_exit_helpers: Any = None
    """The early-exit rewrite's view of these functions (made on first use, see specialize.py)."""
    address_taken: set[str] | None = None
    """The functions whose address device code takes (``part_facts.address_taken``): all a call
    through a pointer can run. None: not known, so any."""

    def propagate(self) -> None:
        """Callers of functions that need the context (or synchronise) do too."""
        changed = True
        while changed:
            changed = False
            for name, fs in self.facts.items():
                calls = set().union(*(f.calls for f in fs)) & self.facts.keys()
                if name not in self.needs_context and calls & self.needs_context:
                    self.needs_context.add(name)
                    changed = True
                if name not in self.has_barrier and calls & self.has_barrier:
                    self.has_barrier.add(name)
                    changed = True

    def whole_block(self, root: str) -> tuple[str, FunctionFacts, int] | None:
        """The first reason (why, where, line) the code ``root`` reaches must run as one whole
        block of its own (None: it may share a block)."""
        return self._first(root, "whole_block")

    def own_block(self, root: str) -> tuple[str, FunctionFacts, int] | None:
        """The first reason (why, where, line) the code ``root`` reaches must run in a fused
        block of exactly its own size (None: any whole block will do)."""
        return self._first(root, "own_block")

    def flat_block(self, root: str) -> tuple[str, FunctionFacts, int] | None:
        """The first reason (why, where, line) the code ``root`` reaches must have a 1-D block
        where it runs whole: it reads the thread's index where hfuse cannot rewrite it, and a
        one-part-per-block layout's fused block is 1-D (None: any shape will do)."""
        return self._first(root, "raw_thread_index")

    def _first(self, root: str, what: str) -> tuple[str, FunctionFacts, int] | None:
        for name in self.reachable(root):
            for f in self.facts[name]:
                if found := getattr(f, what):
                    why, line = found[0]
                    return why, f, line
        return None

    def reachable(self, root: str, follow: Callable[[str, FunctionFacts], bool] | None = None) -> list[str]:
        """What ``root`` calls, directly or not; ``follow``: whether the calls of a definition
        (of a name) count (None: every definition's)."""
        seen: list[str] = []
        stack = [root]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.facts:
                continue
            seen.append(name)
            for f in self.facts[name]:
                if follow is None or follow(name, f):
                    stack.extend(sorted(f.calls))
        return seen


def close_over_calls(
    functions: dict[str, list[Function]], extern_shared: set[str], resolver: Resolver | None = None,
    opaque: OpaqueNames | None = None,
) -> ProgramFacts:
    """``opaque``: the program's names that stand for code hfuse cannot rewrite (a typedef
    of a CUB block type, ...; see opaque.py)."""
    known = set(functions)
    facts = {name: [analyze(f, extern_shared, resolver, known, opaque) for f in fs] for name, fs in functions.items()}
    needs = {n for n, fs in facts.items() if any(f.direct_context for f in fs)}
    barrier = {n for n, fs in facts.items() if any(f.barriers for f in fs)}
    program = ProgramFacts(facts, needs, barrier)
    program.propagate()
    return program


def close_over_symbols(program: ProgramFacts, items: Sequence[TopLevelItem], resolver: Resolver, symbols: set[str]) -> None:
    """Functions that read one of ``symbols`` (each part's own copy) are copied per part."""
    if not symbols:
        return
    for item in items:
        if item.function is not None and item.function.key in program.facts and item.device:
            if {resolver.resolve(item.scope, r) for r in item.references} & symbols:
                program.needs_context.add(item.function.key)
    program.propagate()


def close_over_types(program: ProgramFacts, items: Sequence[TopLevelItem], resolver: Resolver,
                     instance_names: Mapping[str, frozenset[str]] | None = None) -> frozenset[str]:
    """Context types: structs with a member function that needs the part's context, and
    structs that use such a struct. Every function that names one needs the context too
    (it constructs an object that must carry it); ``program`` is updated accordingly.
    ``instance_names``: what a kernel's template arguments name, by kernel key (the
    functor ``U`` of ``apply<Scale>`` is run by the kernel as if it named it)."""
    types: set[str] = {key for item in items for key in item.keys
                       if any(m.key in program.needs_context for m in item.members)}
    changed = bool(types)
    while changed:
        changed = False
        for item in items:
            if item.kind not in ("function", "declaration") or not item.device:
                continue
            names = {resolver.resolve(item.scope, r) for r in item.references} - {None}
            if not names & types:
                continue
            if item.function is not None:
                if item.function.key in program.facts and item.function.key not in program.needs_context:
                    program.needs_context.add(item.function.key)
                    changed = True
            elif not set(item.keys) <= types and not is_prototype(item):  # (a prototype names no type)
                types |= set(item.keys)
                changed = True
        if changed:
            program.propagate()
    _call_members(program, items, resolver, instance_names or {})
    return frozenset(types)


def _call_members(program: ProgramFacts, items: Sequence[TopLevelItem], resolver: Resolver,
                  instance_names: Mapping[str, frozenset[str]]) -> None:
    """A function that names a type runs its member functions (through objects hfuse cannot
    follow: ``s.sync()``, ``callable(...)``): they become its callees, so what they reach is
    copied per part and checked (inline PTX in a member is refused like anywhere else), and
    their barriers give the part an id."""
    members: dict[str, set[str]] = {}
    for item in items:
        for key in item.keys if item.members else ():
            members.setdefault(key, set()).update(m.key for m in item.members if m.key in program.facts)
    if not any(members.values()):
        return
    # a type that names another runs its members too (a traits struct's `using ScanT = Scan<...>`,
    # whose objects a kernel naming the traits makes: `typename Ktraits::ScanT(smem).Run(x)`)
    own = {key: set(keys) for key, keys in members.items()}
    naming: dict[str, set[str]] = {}
    for item in items:  # (a class template's specialisations share its key: what any of them names)
        for key in item.keys if item.function is None and item.kind == "declaration" else ():
            named = {resolver.resolve(item.scope, r) for r in item.references} & members.keys() - {key}
            naming.setdefault(key, set()).update(named)
    while more := {key: extra for key, named in naming.items()
                   if (extra := set().union(*(members[n] for n in named)) - members.get(key, set()))}:
        for key, extra in more.items():
            members.setdefault(key, set()).update(extra)
    for item in items:
        if item.function is None or item.function.key not in program.facts:
            continue
        written = (*item.references, *instance_names.get(item.function.key, ()))
        named = {resolver.resolve(item.scope, r) for r in written} & members.keys()
        if item.function.defined_outside:  # its qualifier names its class: like a member written inside, it
            named.discard(qualify(item.function.scope, item.function.owner))  # calls what it calls by name
        called = set().union(*(members.get(key, set()) for key in named)) - {item.function.key}
        for facts in program.facts[item.function.key] if called else ():
            facts.calls.update(called)
    for item in items:  # a member written in its class runs what the class's members' types do (``reducer_.sum(v)``)
        keys = item.keys if item.function is None else ()
        called = set().union(*(members[n] for key in keys for n in naming.get(key, ()))) - set().union(
            *(own.get(key, set()) for key in keys))
        for member in item.members if called else ():
            for facts in program.facts.get(member.key, []) if not member.defined_outside else ():
                facts.calls.update(called)
    program.propagate()


def check_kernel(kernel: Function, program: ProgramFacts) -> None:
    """Refuse what cannot be fused: recursion, grid-wide synchronisation, and anything that
    may touch the block where hfuse cannot see it (opaque macros, inline PTX barriers,
    CUB block primitives, calls through pointers when some helper depends on the block)."""
    check_recursion(kernel, program.facts, program.needs_context | program.has_barrier)
    check_tile_parameters(kernel, program.reachable(kernel.key), program.facts)
    helpers_with_context = {k for k in program.needs_context
                            if any(f.function.kind != "global" for f in program.facts.get(k, []))
                            and (program.address_taken is None or k in program.address_taken)}
    for name in program.reachable(kernel.key):
        for f in program.facts[name]:
            if f.opaque:
                what, line, hint = f.opaque[0]
                raise HFuseError(
                    f"cannot prove the fused kernel correct: {what}",
                    Location(f.function.file, line, kernel.name),
                    hint=f"{hint} (hfuse refuses rather than emit code that may hang or compute wrong results)",
                )
            for key, line in f.function_values:
                if key in program.needs_context:
                    raise HFuseError(
                        f"cannot prove the fused kernel correct: '{key}' reads the block and is used as a value here "
                        "(a function pointer or a template argument): each part calls its own copy of it, which "
                        "takes the part's view of the block, and no pointer can carry that",
                        Location(f.function.file, line, kernel.name),
                        hint=f"call {key.rsplit('::', 1)[-1]}(...) directly, or keep this kernel unfused",
                    )
            for call in f.indirect_calls:
                targets = {k for k in helpers_with_context if any(call.may_run(g.function) for g in program.facts[k])}
                if targets:
                    count = "its" if call.arguments is None else call.arguments
                    raise HFuseError(
                        "cannot prove the fused kernel correct: it calls a function through a pointer, and some "
                        f"helpers it may hold (taking {count} argument{'' if count == 1 else 's'}) read the block's "
                        f"built-ins or synchronise ({', '.join(sorted(targets)[:3])}): hfuse cannot tell which runs",
                        Location(f.function.file, call.line, kernel.name),
                        hint="call the helper directly, or keep this kernel unfused",
                    )
            for key, others, line, how in f.other_candidates:
                if program.needs_context & {key, *others}:
                    raise HFuseError(
                        f"cannot prove the fused kernel correct: the call of '{key.rsplit('::', 1)[-1]}' may also find "
                        f"{', '.join(others)} {how}, and hfuse gives the part its own copy of "
                        "one of them (it reads the block): it cannot tell which one C++ calls",
                        Location(f.function.file, line, kernel.name),
                        hint=f"qualify the call ({key if '::' in key else '::' + key}(...) or the one you mean), "
                        "or keep this kernel unfused",
                    )
            for key, base, line in f.unseen_bases:
                if key in program.needs_context:
                    raise HFuseError(
                        f"cannot prove the fused kernel correct: the call of '{key.rsplit('::', 1)[-1]}' is in a member "
                        f"of a class derived from '{base}', which no input defines: a member of that name there would "
                        "be what C++ calls, and hfuse gives the part its own copy of the other (it reads the block)",
                        Location(f.function.file, line, kernel.name),
                        hint=f"write {key if '::' in key else '::' + key}(...) or this->{key.rsplit('::', 1)[-1]}(...), "
                        "or keep this kernel unfused",
                    )
            if f.grid_sync:
                what, line = f.grid_sync[0]
                if not GRID_WIDE_USE.search(what):
                    raise HFuseError(
                        f"cannot prove the fused kernel correct: cooperative groups' grid is used as '{what}', and "
                        "hfuse follows a grid group only into its own rank and size queries (each part has a grid "
                        "of its own: grid.thread_rank(), grid.size(), grid.block_rank()...)",
                        Location(f.function.file, line, kernel.name),
                        hint="call those on cg::this_grid() (or a local 'auto grid = cg::this_grid();') where you "
                        "need them, or keep this kernel unfused")
                raise HFuseError(
                    f"uses grid-wide cooperative groups ('{what}'), which needs every block of the grid "
                    "resident and cannot be split between fused kernels",
                    Location(f.function.file, line, kernel.name),
                    hint="fuse only kernels that synchronise at most within a block (a grid group that only "
                    "tells ranks and sizes fuses: grid.thread_rank(), grid.size(), grid.block_rank()...)",
                )
            if f.cluster:
                what, line = f.cluster[0]
                raise HFuseError(
                    f"uses thread block clusters ({what}): a fused kernel's blocks hold other kernels' work, "
                    "so no layout keeps a kernel's clusters",
                    Location(f.function.file, line, kernel.name),
                    hint="keep this kernel unfused, or fuse a version without clusters",
                )
