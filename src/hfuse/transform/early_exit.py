"""EarlyExitRewrite: an early ``return`` must not leave a named barrier waiting forever.

Natively, ``if (i >= n) return;`` followed by ``__syncthreads()`` works: threads that
exited no longer count. A fused part synchronises on a named barrier (``barrier.sync
ID, N``) that waits for N threads, counted by warps: a warp arrives once all its
*non-exited* threads have executed the barrier (PTX ISA, ``barrier``). So a thread that
exits is harmless as long as its warp keeps a thread that arrives, but a warp whose
threads all left never arrives and the part hangs. This rewrite makes the shapes below
safe and refuses everything else with the lines involved: it never emits a hang.

**The flag.** From the first early return that comes before a barrier on, the function
runs as a *region*: ``bool hf_active = true;`` and each guard ``if (cond) return;``
becomes ``if (hf_active && (cond)) hf_active = false;``. In the region

- work (statements that reach no barrier) runs only while the flag holds:
  ``if (hf_active) { ... }``; declarations that later statements use are hoisted out of
  it (``const`` dropped from a hoisted scalar);
- barriers stay where they are and every thread still reaching the region executes them:
  ``__syncthreads();`` alone, ``block.sync();``, ``cg::sync(block);``;
- ``__syncthreads_count/or(p)`` become ``...(hf_active && (p))`` and
  ``__syncthreads_and(p)`` ``...(!hf_active || (p))``: threads that returned count as
  natively, not at all;
- **loops and ``if``s that reach a barrier** (or hold a guard) stay control flow for
  every thread, their bodies are regions themselves (recursively), so the threads that
  returned arrive at each of the barriers the others execute, the same number of times.
  This is only correct if every thread evaluates the control identically: the loop's
  init, condition and update (the ``if``'s condition) must be *block-uniform*, proven
  by a data-flow check over the identifiers they read: built-ins other than
  ``threadIdx`` (``blockDim``, ``blockIdx``, ``gridDim``, ``warpSize``), kernel
  parameters, literals, file-scope names the function never assigns (constants,
  template parameters, enumerators), a few pure functions (``min``, ``max``, ...), the
  result of ``__syncthreads_count/and/or``, and locals whose *every* assignment reads
  only such values and runs in every thread (not in the guarded work, not under a
  condition or in a loop that is not itself block-uniform). Reading ``threadIdx``,
  memory (``a[i]``, ``*p``, ``p->x``), a local whose address is taken or that is passed
  by reference, a ``__device__`` helper's parameter, or a call hfuse cannot prove pure
  makes a value non-uniform; a ``break``/``continue``/``return`` that only some threads
  take makes the trip count non-uniform. Then hfuse refuses, naming the return, the
  loop and the value;
- declarations whose initialiser is pure (no memory read through ``a[i]``, ``*p`` or
  ``p->x``, no call but the pure ones, no assignment), and pure updates of register
  locals (``k += 2;``, ``rounds++;``), run in every thread when code outside their
  chunk of work needs them, so loop bounds such as ``const int half = blockDim.x / 2;``
  stay available and uniform; a thread that returned only computes values in its own
  registers;
- **calls of a helper that synchronises** (``h(...);``, ``x = h(...);``, ``T x =
  h(...);``, ``lhs op= h(...);``, ``return h(...);``) run in every thread: the helper's
  per-part copy (specialize.py already copies helpers that synchronise per part) takes
  the activity flag as an extra last parameter ``bool hf_caller_active = true``, and its
  whole body is a region whose flag starts as ``hf_caller_active`` -- the same rewrite,
  recursively, so it does no work, reads and writes no memory for a thread that
  returned, yet arrives at each of its barriers. The call's arguments must be pure
  (evaluated by the threads that returned too); a value stored from the result is
  stored only while the flag holds (``auto hf_ret = h(...); if (hf_active) lhs = hf_ret;``).
  The helper must have one definition, be called with all its parameters, and its own
  body must pass the same checks (its parameters count as non-uniform: callers may pass
  per-thread values); otherwise the call is refused.

**Warps.** A warp-synchronous operation with a full mask (``__shfl_xor_sync(~0u, ...)``,
``__syncwarp()``, cooperative-groups tiles) waits for every *non-exited* thread of the
warp: natively the threads that returned had exited, in the region they are alive
(measured on an H100: such a kernel hangs). Hence, for a kernel body in horizontal
fusion (``exits=True``: a ``return`` from the body ends the thread), a guard also
lets the threads that left *exit* when their warp keeps an active thread::

    if (hf_active && (i >= n)) hf_active = false;
    if (__any_sync(0xffffffffu, hf_active) && !hf_active) return;

so a warp either has only active threads (warp operations behave as natively, exited
threads excluded) or only inactive ones (which skip all the work, warp operations
included, and keep arriving at the barriers for the warp). In vertical fusion and in
helpers a return does not end the thread, so the flag alone is used; a vertical kernel
body whose region (or a function it calls) uses a warp-synchronous operation is
refused. A guard whose condition is block-uniform stays a plain ``return`` (every
thread of the part leaves together).

Refused, with the early return's line and the offending line: a barrier reached in any
other shape (inside ``switch``, a range ``for``, an expression), a loop/``if`` around a
barrier whose control is not provably block-uniform, a return/``break``/``continue``
inside guarded work before a barrier, a value-returning guard with a thread-dependent
condition, a hoisted declaration that cannot be split (``auto``, ``constexpr``,
references, arrays, constructor arguments), ``goto``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Iterable, Mapping

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.extract import declarator_name
from ..frontend.parse import is_pragma, line_of, parse, walk
from .analysis import (
    CG_NAMESPACES, SYNC_BUILTINS, called_name, cg_block_variables, is_block_sync_call, is_cg_sync_call,
)

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


# --------------------------------------------------------------------------- what is known of other functions
@dataclass(frozen=True, eq=False)
class Helpers:
    """What the rewrite may know of the program's functions.

    ``barriers``: names (qualified keys and plain names) of the functions that
    (transitively) execute a block barrier; ``texts``: the definitions of every function
    by the same names, so a helper that synchronises can be given the activity flag and
    a callee's parameters and warp operations can be checked.
    """

    barriers: frozenset[str] = frozenset()
    texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    origins: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """A definition's text -> (file, line of its first line), for messages."""
    cg: frozenset[str] = CG_NAMESPACES
    """Spellings of cooperative groups in the program (``g`` after ``namespace g = cooperative_groups;``)."""
    attempts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    """Memo of one fusion request: helper text -> its flagged rewrite, and "needed" -> ``_needed``."""

    @classmethod
    def of(cls, value: "Helpers | Iterable[str]") -> "Helpers":
        return value if isinstance(value, Helpers) else cls(frozenset(value))

    @cached_property
    def key(self) -> tuple:
        return (self.barriers, tuple(sorted(self.texts.items())), tuple(sorted(self.origins.items())), self.cg)

    def definitions(self, name: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.texts.get(name, ())))


def program_helpers(program) -> Helpers:
    """``Helpers`` of a ``ProgramFacts`` (transform/analysis.py)."""
    texts: dict[str, tuple[str, ...]] = {}
    origins: dict[str, tuple[str, int]] = {}
    for key, facts in program.facts.items():
        defs = tuple(f.function.text for f in facts)
        for f in facts:
            origins.setdefault(f.function.text, (str(f.function.file), f.function.line))
        for name in {key, key.split("::")[-1]}:
            texts[name] = texts.get(name, ()) + defs
    barriers = {name for key in program.has_barrier for name in (key, key.split("::")[-1])}
    cg = frozenset().union(CG_NAMESPACES, *(f.cg for facts in program.facts.values() for f in facts))
    return Helpers(frozenset(barriers), texts, origins, cg)


# --------------------------------------------------------------------------- syntax helpers
def _key(node: ts.Node) -> tuple[int, int, str]:
    return (node.start_byte, node.end_byte, node.type)


def _same(a: ts.Node | None, b: ts.Node | None) -> bool:
    return a is not None and b is not None and _key(a) == _key(b)


def _function(root: ts.Node) -> ts.Node:
    for node in walk(root):
        if node.type == "function_definition":
            return node
    raise AssertionError("no function definition")


def _function_declarator(definition: ts.Node) -> ts.Node | None:
    node = definition.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


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
    """(condition, returned value or None) of ``if (cond) return [v];`` without else."""
    if statement.type != "if_statement" or statement.child_by_field_name("alternative") is not None:
        return None
    then = statement.child_by_field_name("consequence")
    if then.type == "compound_statement":
        inner = _real(then.named_children)
        then = inner[0] if len(inner) == 1 else None
    if then is None or then.type != "return_statement":
        return None
    condition = statement.child_by_field_name("condition")
    if condition.child_by_field_name("initializer") is not None or condition.child_by_field_name("value") is None:
        return None
    value = _real(then.named_children)
    return condition, (value[0] if value else None)


def _indented(text: str, indent: str) -> str:
    """A statement's text with its first line at ``indent``, later lines keeping their shape."""
    first, *rest = text.splitlines() or [""]
    return "\n".join([indent + first, *(("  " + line) if line.strip() else line for line in rest)])


# --------------------------------------------------------------------------- the plan of a region
@dataclass
class _Item:
    kind: str
    """keep | preproc | guard | return | barrier | call | block | loop | if | bad | pure | work"""
    node: ts.Node
    sub: list["_Item"] = field(default_factory=list)
    other: list["_Item"] | None = None
    """The else branch of an ``if`` region."""
    call: ts.Node | None = None
    why: str = ""
    late: bool = False
    """After the function's last barrier: a return there is harmless."""


class _Fn:
    """One function, parsed, with what the rewrite needs to know about it."""

    def __init__(self, text: str, helpers: Helpers, file: str, line_base: int, kernel: str, flagged: bool = False):
        self.text = text
        self.data = text.encode()
        self.tree = parse(self.data)
        self.definition = _function(self.tree.root_node)
        self.body = self.definition.child_by_field_name("body")
        self.helpers = helpers
        self.file, self.line_base, self.kernel = file, line_base, kernel
        self.flagged = flagged
        head = self.data[self.definition.start_byte : self.body.start_byte]
        self.is_kernel = b"__global__" in head
        declarator = _function_declarator(self.definition)
        self.name = _plain_name(declarator.child_by_field_name("declarator")) if declarator is not None else None
        self.params = declarator.child_by_field_name("parameters") if declarator is not None else None
        self.block_vars = cg_block_variables(self.definition, helpers.cg)
        self.first_return: ts.Node | None = None
        self.uniform: set[str] = set()
        self.reasons: dict[str, str] = {}

    # ---- text
    def src(self, node: ts.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode()

    def line(self, node: ts.Node) -> int:
        return self.line_base + line_of(node)

    def refuse(self, node: ts.Node, why: str, hint: str = _HINT) -> HFuseError:
        if self.flagged:
            message = why
        else:
            where = f"early return at line {self.line(self.first_return)}" if self.first_return is not None else "early return"
            message = f"{where} comes before a barrier and cannot be made safe: {why}"
        return HFuseError(message, Location(self.file, self.line(node), self.kernel), hint=hint)

    # ---- barriers
    def is_barrier_call(self, node: ts.Node) -> bool:
        if node.type != "call_expression":
            return False
        name = called_name(node)
        fn = node.child_by_field_name("function")
        if name is None and fn is not None and fn.type == "field_expression":  # obj.f(): a member that syncs
            name = _plain_name(fn.child_by_field_name("field"))
        return (name in SYNC_BUILTINS or name in self.helpers.barriers or is_cg_sync_call(node, self.helpers.cg)
                or is_block_sync_call(node, self.block_vars))

    def reaches(self, node: ts.Node) -> bool:
        return any(self.is_barrier_call(n) for n in walk(node))

    def is_plain_barrier(self, statement: ts.Node) -> bool:
        if statement.type != "expression_statement" or not statement.named_children:
            return False
        call = statement.named_children[0]
        if call.type != "call_expression" or not self.is_barrier_call(call):
            return False
        return (called_name(call) == "__syncthreads" or is_cg_sync_call(call, self.helpers.cg)
                or is_block_sync_call(call, self.block_vars))

    def sync_call(self, statement: ts.Node) -> ts.Node | None:
        """The call of ``h(...);``, ``x op= h(...);``, ``T x = h(...);`` or ``return h(...);`` when it
        synchronises (a helper that does, or ``__syncthreads_count/and/or``)."""
        call = None
        if statement.type == "expression_statement" and statement.named_children:
            expr = statement.named_children[0]
            if expr.type == "assignment_expression":
                expr = expr.child_by_field_name("right")
            call = expr
        elif statement.type == "declaration":
            declarators = statement.children_by_field_name("declarator")
            if len(declarators) == 1 and declarators[0].type == "init_declarator":
                call = declarators[0].child_by_field_name("value")
        elif statement.type == "return_statement":
            values = _real(statement.named_children)
            call = values[0] if values else None
        if call is None:
            return None
        if call.type == "call_expression":
            return call if self._value_sync(call) else None
        # ``x += (unsigned)__syncthreads_count(p) << 3;``: the call inside an expression that
        # only computes with its value, which the threads that returned may evaluate too
        found = [n for n in walk(call) if n.type == "call_expression" and self._value_sync(n)]
        if len(found) == 1 and self._pure_around(call, found[0]) is None:
            return found[0]
        return None

    def _value_sync(self, call: ts.Node) -> bool:
        name = called_name(call)
        return name in _RED or (name in self.helpers.barriers and name not in SYNC_BUILTINS)

    def _pure_around(self, node: ts.Node, hole: ts.Node) -> ts.Node | None:
        """As ``pure``, for ``node`` with the call ``hole`` in it taken as pure; an operator
        that would skip the call in some threads (``&&``, ``||``, ``?:``) is not."""
        if (node.start_byte, node.end_byte, node.type) == (hole.start_byte, hole.end_byte, hole.type):
            return None
        if not (node.start_byte <= hole.start_byte and hole.end_byte <= node.end_byte):
            return self.pure(node)
        if node.type == "binary_expression":
            if node.child_by_field_name("operator").type in ("&&", "||"):
                return node
        elif node.type not in ("cast_expression", "parenthesized_expression", "unary_expression"):
            return node
        for child in node.named_children:
            bad = self._pure_around(child, hole)
            if bad is not None:
                return bad
        return None

    # ---- purity and uniformity
    def pure(self, node: ts.Node, address: bool = False) -> ts.Node | None:
        """The first part of ``node`` that reads memory, writes anything or calls a function not
        known to be pure (None: evaluating it in any thread is harmless). ``address``: ``node``
        is the operand of ``&`` (``&a[i]``, ``&p->x`` compute an address and read nothing)."""
        t = node.type
        if t in _TYPE_NODES or t == "identifier":
            return None
        if t in ("assignment_expression", "update_expression", "new_expression", "delete_expression",
                 "lambda_expression", "gnu_asm_expression", "throw_expression", "co_await_expression", "this"):
            return node
        if t == "pointer_expression":
            operator = node.child_by_field_name("operator").type
            argument = node.child_by_field_name("argument")
            if operator == "&":
                return self.pure(argument, address=True)
            return self.pure(argument) if address else node
        if t == "subscript_expression":
            if not address:
                return node
            return self.pure(node.child_by_field_name("argument")) or self.pure(node.child_by_field_name("indices"))
        if t == "field_expression":
            arrow = node.child_by_field_name("operator").type == "->"
            if arrow and not address:
                return node
            return self.pure(node.child_by_field_name("argument"), address=address and not arrow)
        if t == "parenthesized_expression" and address and node.named_children:
            return self.pure(node.named_children[0], address=True)
        if t == "call_expression":
            if called_name(node) not in _PURE_CALLS:
                return node
            return self.pure(node.child_by_field_name("arguments"))
        for child in node.named_children:
            bad = self.pure(child)
            if bad is not None:
                return bad
        return None

    def describe(self, node: ts.Node) -> str:
        text = " ".join(self.src(node).split())
        return text if len(text) <= 50 else text[:47] + "..."

    def non_uniform(self, node: ts.Node | None, uniform: set[str]) -> str | None:
        """Why ``node`` may differ between the threads of a block (None: it cannot)."""
        if node is None:
            return None
        t = node.type
        if t in _TYPE_NODES:
            return None
        if t == "identifier":
            name = node.text.decode()
            if name in uniform or name in _UNIFORM_BUILTINS:
                return None
            if name == "threadIdx":
                return "reads threadIdx, which differs between threads"
            return f"reads '{name}', which {self.reasons.get(name, 'may differ between threads')}"
        if t == "field_expression":
            if node.child_by_field_name("operator").type == "->":
                return f"reads memory ('{self.describe(node)}')"
            return self.non_uniform(node.child_by_field_name("argument"), uniform)
        if t == "subscript_expression" or (t == "pointer_expression" and node.child_by_field_name("operator").type == "*"):
            return f"reads memory ('{self.describe(node)}')"
        if t == "pointer_expression":
            return f"takes an address ('{self.describe(node)}')"
        if t == "call_expression":
            name = called_name(node)
            if name in _RED:
                return None  # the same result in every thread of the block
            if name not in _PURE_CALLS:
                return f"calls '{name or self.describe(node)}', which hfuse cannot prove returns the same value in every thread"
            return self.non_uniform(node.child_by_field_name("arguments"), uniform)
        if t in ("assignment_expression", "update_expression"):
            target = node.child_by_field_name("left" if t == "assignment_expression" else "argument")
            base = _base_identifier(target)
            if base is None:
                return f"writes memory ('{self.describe(node)}')"
            why = self.non_uniform(base, uniform)
            if why is None and t == "assignment_expression":
                why = self.non_uniform(node.child_by_field_name("right"), uniform)
            return why
        if t in ("new_expression", "delete_expression", "lambda_expression", "gnu_asm_expression", "this"):
            return f"uses '{self.describe(node)}'"
        if t == "condition_clause":
            if node.child_by_field_name("initializer") is not None or node.child_by_field_name("value") is None:
                return "declares a variable in the condition"
            return self.non_uniform(node.child_by_field_name("value"), uniform)
        if t == "cast_expression":
            return self.non_uniform(node.child_by_field_name("value"), uniform)
        for child in node.named_children:
            why = self.non_uniform(child, uniform)
            if why is not None:
                return why
        return None

    def control(self, loop: ts.Node) -> list[ts.Node]:
        if loop.type == "for_statement":
            parts = [loop.child_by_field_name(f) for f in ("initializer", "condition", "update")]
            return [p for p in parts if p is not None and p.type != "declaration"]
        return [loop.child_by_field_name("condition")]

    def loop_why(self, loop: ts.Node) -> str | None:
        """Why a loop's control may differ between threads, looking past its own counters
        (``k`` in ``for (k = 0; k < m; ++k)`` is only as uniform as ``m``)."""
        why = self.control_non_uniform(loop, self.uniform)
        if why is None or loop.type != "for_statement":
            return why
        counters = set()
        for part in (loop.child_by_field_name("initializer"), loop.child_by_field_name("update")):
            for n in walk(part) if part is not None else []:
                if n.type == "init_declarator" and (d := declarator_name(n)) is not None:
                    counters.add(d.text.decode())
                elif n.type in ("assignment_expression", "update_expression"):
                    base = _base_identifier(n.child_by_field_name("left" if n.type == "assignment_expression" else "argument"))
                    if base is not None:
                        counters.add(base.text.decode())
        return self.control_non_uniform(loop, self.uniform | counters) or why

    def control_non_uniform(self, loop: ts.Node, uniform: set[str]) -> str | None:
        for part in self.control(loop):
            why = self.non_uniform(part, uniform)
            if why is not None:
                return why
        return None

    # ---- the plan
    def plan(self, statements: list[ts.Node], top: bool) -> list[_Item]:
        reach = [self.reaches(s) for s in statements]
        last = max((i for i, r in enumerate(reach) if r), default=-1)
        items = [self.classify(s, reach[i], not top or i <= last) for i, s in enumerate(statements)]
        for i, item in enumerate(items):
            item.late = top and i > last
        self._place_pure(items)
        return items

    def classify(self, s: ts.Node, reaches: bool, before: bool) -> _Item:
        if s.type == "comment" and not is_pragma(s, self.data):
            return _Item("keep", s)
        if s.type.startswith("preproc") or s.type == "comment":  # a pragma goes with the statement after it
            return _Item("preproc", s)
        if _guard(s) is not None:
            return _Item("guard", s)
        if s.type in ("return_statement", "break_statement", "continue_statement"):
            call = self.sync_call(s) if s.type == "return_statement" else None
            return _Item("call", s, call=call) if call is not None else _Item("return", s)
        if self.is_plain_barrier(s):
            return _Item("barrier", s)
        call = self.sync_call(s)
        if call is not None:
            return _Item("call", s, call=call)
        escapes = _escapes(s) if before else []
        if s.type == "compound_statement" and (reaches or escapes):
            return _Item("block", s, self.plan(list(s.named_children), False))
        if s.type in _LOOPS and (reaches or escapes):
            return _Item("loop", s, self.plan(_statements(s.child_by_field_name("body")), False))
        if s.type == "if_statement" and (reaches or escapes):
            then = self.plan(_statements(s.child_by_field_name("consequence")), False)
            alternative = s.child_by_field_name("alternative")
            other = None
            if alternative is not None:
                inner = _real(alternative.named_children)
                other = self.plan(_statements(inner[0]) if inner else [], False)
            return _Item("if", s, then, other)
        if reaches:
            barrier = next(n for n in walk(s) if self.is_barrier_call(n))
            return _Item("bad", s, why=(
                f"the barrier '{self.describe(barrier)}' at line {self.line(barrier)} is reached inside "
                f"'{self.describe(s)}', a construct hfuse cannot make every thread run the same way (supported: "
                "the barrier alone, a loop or 'if' whose control is the same in every thread, or 'h(...);', "
                "'x = h(...);', 'T x = h(...);' for a helper h that synchronises)"))
        if escapes:
            return _Item("bad", escapes[0], why=(
                f"'{self.describe(escapes[0])}' at line {self.line(escapes[0])} is taken by only some threads inside "
                "the work, before a barrier (only 'if (cond) return;' guards can be rewritten)"))
        if self.pure_declaration(s) or self.pure_update(s):
            return _Item("pure", s)
        return _Item("work", s)

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

    @cached_property
    def registers(self) -> frozenset[str]:
        """Locals and by-value parameters that live in registers: writing one in a thread that
        returned changes nothing another thread sees."""
        out, memory = set(), set()
        params = _real(self.params.named_children) if self.params is not None else []
        for param in params:
            target = param.child_by_field_name("declarator")
            name = declarator_name(target) if target is not None else None
            if name is not None:
                (out if target.type in ("identifier", "pointer_declarator") else memory).add(name.text.decode())
        for node in walk(self.body):
            if node.type != "declaration":
                continue
            words = {c.text.decode() for c in node.named_children if c.type in ("storage_class_specifier", "type_qualifier")}
            for declarator in node.children_by_field_name("declarator"):
                target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
                name = declarator_name(target) if target is not None else None
                if name is None:
                    continue
                register = target.type in ("identifier", "pointer_declarator") and not words & {
                    "__shared__", "static", "extern", "volatile", "__constant__", "__device__"}
                (out if register else memory).add(name.text.decode())
        return frozenset(out - memory)

    def pure_update(self, s: ts.Node) -> bool:
        """``x = e;``, ``x op= e;``, ``x++;`` (and such joined by commas) on register locals, ``e`` pure."""
        if s.type != "expression_statement" or not s.named_children:
            return False
        stack = [s.named_children[0]]
        while stack:
            expr = stack.pop()
            if expr.type == "comma_expression":
                stack.extend(expr.named_children)
                continue
            if expr.type == "parenthesized_expression" and expr.named_children:
                stack.append(expr.named_children[0])
                continue
            if expr.type not in ("assignment_expression", "update_expression"):
                return False
            target = expr.child_by_field_name("left" if expr.type == "assignment_expression" else "argument")
            if target.type != "identifier" or target.text.decode() not in self.registers:
                return False
            if expr.type == "assignment_expression" and self.pure(expr.child_by_field_name("right")) is not None:
                return False
        return True

    def _place_pure(self, items: list[_Item]) -> None:
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
    def guarded(self, items: list[_Item], out: set | None = None) -> set:
        """Statements that only the threads still active run (and guard conditions)."""
        out = set() if out is None else out
        for item in items:
            if item.kind in ("work", "guard", "bad"):
                out.add(_key(item.node))
            for sub in (item.sub, item.other or []):
                self.guarded(sub, out)
        return out

    def all_threads(self, node: ts.Node, uniform: set[str], guarded: set) -> str | None:
        """Why ``node`` may run in some threads of the block and not others, or a different
        number of times (None: every thread runs it alike)."""
        current = node
        while current is not None and not _same(current, self.body):
            if _key(current) in guarded:
                return "in work that only the threads still active run"
            parent = current.parent
            if parent is None:
                break
            t = parent.type
            if t == "if_statement" and not _same(current, parent.child_by_field_name("condition")):
                why = self.non_uniform(parent.child_by_field_name("condition"), uniform)
                if why is not None:
                    return f"under the 'if' at line {self.line(parent)}, whose condition {why}"
            elif t in _LOOPS and not _same(current, parent.child_by_field_name("initializer")):
                why = self.control_non_uniform(parent, uniform)
                if why is not None:
                    return f"in the loop at line {self.line(parent)}, whose control {why}"
            elif t in ("for_range_loop", "switch_statement", "case_statement", "lambda_expression", "try_statement",
                       "catch_clause"):
                return f"inside a {t.replace('_', ' ')} (line {self.line(parent)})"
            elif ((t == "conditional_expression" and not _same(current, parent.child_by_field_name("condition")))
                  or (t == "binary_expression" and parent.child_by_field_name("operator").type in ("&&", "||")
                      and _same(current, parent.child_by_field_name("right")))
                  or (t == "argument_list" and parent.parent is not None and called_name(parent.parent) in _RED)):
                return f"in a conditionally evaluated operand (line {self.line(parent)})"
            current = parent
        return None

    def compute_uniform(self, guarded: set) -> None:
        """The locals, parameters and file-scope names every thread of the block holds alike."""
        declared: dict[str, str] = {}
        bad: dict[str, str] = {"threadIdx": "differs between threads"}
        names = {n.text.decode() for n in walk(self.definition) if n.type == "identifier"}
        for param in _real(self.params.named_children) if self.params is not None else []:
            name = declarator_name(param.child_by_field_name("declarator")) if param.child_by_field_name("declarator") else None
            if name is None:
                continue
            declared[name.text.decode()] = "param"
            if not self.is_kernel:
                bad[name.text.decode()] = "is a parameter of a __device__ function (callers may pass different values per thread)"
        defs: list[tuple[str, list[ts.Node], ts.Node]] = []
        for node in walk(self.body):
            t = node.type
            if t == "declaration":
                words = {c.text.decode() for c in node.named_children if c.type in ("storage_class_specifier", "type_qualifier")}
                memory = words & {"__shared__", "static", "extern", "volatile", "__constant__", "__device__"}
                for declarator in node.children_by_field_name("declarator"):
                    target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
                    name_node = declarator_name(target) if target is not None else None
                    if name_node is None:
                        for ident in (n for n in walk(declarator) if n.type == "identifier"):
                            bad[ident.text.decode()] = f"is declared at line {self.line(node)} in a form hfuse does not follow"
                        continue
                    name = name_node.text.decode()
                    declared[name] = "local"
                    if memory:
                        bad[name] = f"lives in {'/'.join(sorted(memory))} memory (line {self.line(node)})"
                    elif target.type not in ("identifier", "pointer_declarator"):
                        bad[name] = f"is declared at line {self.line(node)} as an array or reference"
                    if declarator.type == "init_declarator":
                        value = declarator.child_by_field_name("value")
                        defs.append((name, [value], node))
                        if target.type == "reference_declarator":
                            for ident in (n for n in walk(value) if n.type == "identifier"):
                                bad[ident.text.decode()] = f"is bound to a reference at line {self.line(node)}"
            elif t == "for_range_loop":
                for ident in (n for n in walk(node.child_by_field_name("declarator")) if n.type == "identifier"):
                    bad[ident.text.decode()] = f"is the variable of a range 'for' (line {self.line(node)})"
            elif t == "assignment_expression":
                left = node.child_by_field_name("left")
                base = _base_identifier(left)
                if base is not None:
                    defs.append((base.text.decode(), [node.child_by_field_name("right")], node))
                elif left.type == "subscript_expression" and (arr := _base_identifier(left.child_by_field_name("argument"))):
                    bad[arr.text.decode()] = f"is written element-wise at line {self.line(node)}"
            elif t == "update_expression":
                base = _base_identifier(node.child_by_field_name("argument"))
                if base is not None:
                    defs.append((base.text.decode(), [], node))
            elif t == "pointer_expression" and node.child_by_field_name("operator").type == "&":
                base = _base_identifier(node.child_by_field_name("argument"))
                if base is not None:
                    bad[base.text.decode()] = f"has its address taken at line {self.line(node)}"
            elif t == "call_expression":
                self._taint_call(node, bad)
        for name, _, where in defs:
            if name not in declared and name not in bad:
                bad[name] = f"is assigned at line {self.line(where)} and is not a local of the function"
        uniform = names - set(bad)
        reasons = dict(bad)
        self.reasons = reasons
        changed = True
        while changed:
            changed = False
            for name, values, where in defs:
                if name not in uniform:
                    continue
                why = None
                for value in values:
                    inner = self.non_uniform(value, uniform)
                    if inner is not None:
                        why = f"is set at line {self.line(where)} by code that {inner}"
                        break
                if why is None:
                    position = self.all_threads(where, uniform, guarded)
                    if position is not None:
                        why = f"is assigned at line {self.line(where)}, {position}"
                if why is not None:
                    uniform.discard(name)
                    reasons[name] = why
                    changed = True
        self.uniform, self.reasons = uniform, reasons

    def _taint_call(self, call: ts.Node, bad: dict[str, str]) -> None:
        """Locals a call may change: passed as a bare name (unless the callee takes it by value)
        or the object of a member call."""
        fn = call.child_by_field_name("function")
        if fn is not None and fn.type == "field_expression":
            base = _base_identifier(fn.child_by_field_name("argument"))
            if base is not None and not is_block_sync_call(call, self.block_vars):
                bad.setdefault(base.text.decode(), f"has a member function called at line {self.line(call)}")
        name = called_name(call)
        if name in _PURE_CALLS or name in _RED or name in SYNC_BUILTINS:
            return
        args = _real(call.child_by_field_name("arguments").named_children) if call.child_by_field_name("arguments") else []
        for index, arg in enumerate(args):
            base = _base_identifier(arg)
            if base is not None and self._by_reference(name, index):
                bad.setdefault(base.text.decode(), f"is passed to '{name or self.describe(call)}' at line {self.line(call)}, "
                                                   "which may take it by reference")

    def _by_reference(self, name: str | None, index: int) -> bool:
        definitions = self.helpers.definitions(name) if name else ()
        if not definitions:
            return True
        for text in definitions:
            params = _parameters(text)
            if params is None or index >= len(params) or "&" in params[index]:
                return True
        return False


@lru_cache(maxsize=1024)
def _parameters(text: str) -> tuple[str, ...] | None:
    """Each parameter's declarator text of a function definition (None: cannot tell)."""
    root = parse(text.encode()).root_node
    try:
        declarator = _function_declarator(_function(root))
    except AssertionError:
        return None
    if declarator is None:
        return None
    params = declarator.child_by_field_name("parameters")
    out = []
    for p in _real(params.named_children):
        if p.type == "variadic_parameter" or p.text.decode().strip() == "...":
            return None
        target = p.child_by_field_name("declarator")
        out.append(target.text.decode() if target is not None else "")
    if len(out) == 1 and params.text.decode().replace(" ", "") == "(void)":
        return ()
    return tuple(out)


# --------------------------------------------------------------------------- the rewrite
class _Rewrite:
    def __init__(self, fn: _Fn, exits: bool):
        self.fn = fn
        self.exits = exits

    def region(self, items: list[_Item], indent: str) -> list[str]:
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

    def item(self, item: _Item, indent: str) -> list[str]:
        fn, node = self.fn, item.node
        kind = item.kind
        if kind in ("keep", "barrier", "pure"):
            return [_indented(fn.src(node), indent)]
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
        raise AssertionError(kind)

    def control_text(self, start: int, end: int) -> str:
        """Source between two offsets with the predicates of ``__syncthreads_*`` made neutral."""
        fn = self.fn
        edits = []
        for n in walk(fn.tree.root_node):
            if n.type == "call_expression" and called_name(n) in _RED and start <= n.start_byte and n.end_byte <= end:
                edits.append(self.red_edit(n))
        return _apply(fn.data, start, end, [e for e in edits if e is not None])

    def red_edit(self, call: ts.Node) -> tuple[int, int, str] | None:
        args = _real(call.child_by_field_name("arguments").named_children)
        if len(args) != 1:
            return None
        p = self.fn.src(args[0])
        text = f"!{FLAG} || ({p})" if _RED[called_name(call)] == "and" else f"{FLAG} && ({p})"
        return (args[0].start_byte, args[0].end_byte, text)

    def return_text(self, node: ts.Node, indent: str) -> str:
        fn = self.fn
        values = _real(node.named_children) if node.type == "return_statement" else []
        if values and fn.pure(values[0]) is not None:
            return f"{indent}if ({FLAG}) {fn.src(node).strip()}\n{indent}return {{}};"
        return _indented(fn.src(node), indent)

    def guard(self, item: _Item, indent: str) -> list[str]:
        fn, node = self.fn, item.node
        condition, value = _guard(node)
        if item.late:
            # no barrier follows: the threads still active may simply leave
            ret = next(n for n in walk(node) if n.type == "return_statement")
            cond = self.control_text(condition.start_byte, condition.end_byte)
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
        lines = [f"{indent}if ({FLAG} && {cond}) {FLAG} = false;"]
        if self.exits:
            lines.append(f"{indent}if (__any_sync(0xffffffffu, {FLAG}) && !{FLAG}) return;"
                         "  // leave only if the warp keeps an active thread")
        return lines

    def call(self, item: _Item, indent: str) -> list[str]:
        fn, node, call = self.fn, item.node, item.call
        name = called_name(call)
        if name in _RED:
            edit = self.red_edit(call)
            new_call = _apply(fn.data, call.start_byte, call.end_byte, [edit] if edit else [])
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
        attempt = _flagged(definitions[0], fn.helpers, fn.file, fn.kernel)
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


def _apply(data: bytes, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
    out, position = [], start
    for a, b, text in sorted(edits):
        out.append(data[position:a].decode())
        out.append(text)
        position = b
    out.append(data[position:end].decode())
    return "".join(out)


def _hoist(fn: _Fn, chunk: list[ts.Node], later: list[ts.Node]) -> tuple[list[str], list[str]]:
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
            simple = target.type == "identifier"
            pointer = target.type == "pointer_declarator" and all(n.type != "type_qualifier" for n in walk(target))
            if not (simple or pointer) or value.type in ("initializer_list", "argument_list"):
                raise fn.refuse(statement, f"'{fn.describe(statement)}' is used after a barrier and cannot be hoisted")
            own_type = re.sub(r"\bconst\b\s*", "", type_text).strip() if simple else type_text
            hoisted.append(f"{own_type} {fn.src(target)};")
            kept.append(f"{declarator_name(target).text.decode()} = {fn.src(value)};")
    return hoisted, kept


# --------------------------------------------------------------------------- drivers
def _region_start(fn: _Fn) -> int | None:
    """Index of the first top-level statement the region starts at (None: nothing to do)."""
    statements = list(fn.body.named_children)
    reach = [i for i, s in enumerate(statements) if fn.reaches(s)]
    if not reach:
        return None
    candidates = [i for i, s in enumerate(statements[: reach[-1] + 1]) if _escapes(s)]
    return candidates[0] if candidates else None


def _rewrite(fn: _Fn, exits: bool) -> str:
    statements = list(fn.body.named_children)
    if fn.flagged:
        start: int | None = 0
        candidates = [0]
    else:
        reach = [i for i, s in enumerate(statements) if fn.reaches(s)]
        if not reach:
            return fn.text
        candidates = [i for i, s in enumerate(statements[: reach[-1] + 1]) if _escapes(s)]
        if not candidates:
            return fn.text
        start = candidates[0]
        fn.first_return = _escapes(statements[start])[0]
    gotos = [n for n in walk(fn.body) if n.type == "goto_statement"]
    while True:
        items = fn.plan(statements[start:], top=True)
        fn.compute_uniform(fn.guarded(items))
        head = items[0] if items else None
        if fn.flagged or head is None or head.kind != "guard":
            break
        condition, _ = _guard(head.node)
        if fn.non_uniform(condition, fn.uniform) is not None:
            break
        # a block-uniform guard stays a plain return: the region starts at the next one
        rest = [i for i in candidates if i > start]
        if not rest:
            return fn.text
        start = rest[0]
        fn.first_return = _escapes(statements[start])[0]
    if gotos:
        raise fn.refuse(gotos[0], f"'goto' at line {fn.line(gotos[0])}: hfuse does not rewrite functions with goto")
    if fn.is_kernel and not exits:
        _check_warp_operations(fn, statements[start:])
    rewrite = _Rewrite(fn, exits)
    indent = " " * statements[0].start_point[1] if statements else "  "
    out = [_indented(fn.src(s), indent) for s in statements[:start]]
    out.append(f"{indent}bool {FLAG} = {CALLER_FLAG if fn.flagged else 'true'};")
    out.extend(rewrite.region(items, indent))
    closing = " " * fn.body.end_point[1] if fn.body.end_point[1] > 0 else ""
    new_body = "{\n" + "\n".join(out) + "\n" + closing[:-1] + "}"
    data = fn.data
    head_text = data[: fn.body.start_byte].decode()
    if fn.flagged:
        params = fn.params
        inner = data[params.start_byte + 1 : params.end_byte - 1].decode()
        real = _real(params.named_children)
        extra = f"bool {CALLER_FLAG} = true"
        joined = extra if not real or inner.strip() == "void" else f"{inner}, {extra}"
        head_text = data[: params.start_byte].decode() + f"({joined})" + data[params.end_byte : fn.body.start_byte].decode()
    return head_text + new_body + data[fn.body.end_byte :].decode()


def _check_warp_operations(fn: _Fn, region: list[ts.Node]) -> None:
    """In flag mode the threads that returned stay alive next to the active ones of their warp:
    a full-mask warp operation in the region (or in a function it calls) would wait for them."""
    for statement in region:
        match = _WARP_SYNC.search(fn.src(statement))
        if match is not None:
            raise fn.refuse(statement, _warp_why(match.group(0), f"line {fn.line(statement)}"), hint=_WARP_HINT)
    seen: set[str] = set()
    todo = [m.group(1) for s in region for m in _CALLED.finditer(fn.src(s))]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in fn.helpers.definitions(name):
            match = _WARP_SYNC.search(text)
            if match is not None:
                raise fn.refuse(region[0], _warp_why(match.group(0), f"'{name}'"), hint=_WARP_HINT)
            todo.extend(m.group(1) for m in _CALLED.finditer(text))


_WARP_HINT = "use horizontal fusion (the default), where the threads that returned exit, or keep this kernel unfused"


def _warp_why(op: str, where: str) -> str:
    return (f"in vertical fusion the threads that returned stay alive until the part ends, and the warp-synchronous "
            f"'{op}' ({where}) waits for every live thread of its warp: it would hang")


@dataclass(frozen=True)
class _Attempt:
    text: str | None
    error: HFuseError | None
    params: tuple[str, ...] | None


def _flagged(text: str, helpers: Helpers, file: str, kernel: str) -> _Attempt:
    """The helper ``text`` taking the activity flag (memoised), or why it cannot."""
    memo = helpers.attempts
    key = text
    if key not in memo:
        params = _parameters(text)
        file, line = helpers.origins.get(text, (file, 1))
        try:
            fn = _Fn(text, helpers, file, line - 1, kernel, flagged=True)
            if fn.is_kernel or fn.params is None:
                raise HFuseError("it is not a helper function", Location(file, 1, kernel))
            memo[key] = _Attempt(_rewrite(fn, exits=False), None, params)
        except HFuseError as err:
            memo[key] = _Attempt(None, err, params)
    return memo[key]


def _calls_in(items: list[_Item], out: set[str]) -> set[str]:
    for item in items:
        if item.kind == "call" and item.call is not None and called_name(item.call) not in _RED:
            out.add(called_name(item.call))
        _calls_in(item.sub, out)
        _calls_in(item.other or [], out)
    return out


def _needed(helpers: Helpers) -> frozenset[str]:
    """Helpers some function calls from its region (so they take the activity flag): over all
    functions that synchronise, closed over the calls in the regions of those helpers."""
    if "needed" not in helpers.attempts:

        def region_calls(text: str, whole: bool) -> set[str]:
            try:
                fn = _Fn(text, helpers, "", 0, "")
                statements = list(fn.body.named_children)
                start = 0 if whole else _region_start(fn)
                return set() if start is None else _calls_in(fn.plan(statements[start:], top=True), set())
            except Exception:  # a definition hfuse cannot plan: its own rewrite reports it
                return set()

        texts = {t for name in helpers.barriers for t in helpers.definitions(name)}
        todo = [n for t in texts for n in region_calls(t, whole=False)]
        needed: set[str] = set()
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.add(name)
            todo.extend(n for t in helpers.definitions(name) for n in region_calls(t, whole=True))
        helpers.attempts["needed"] = frozenset(needed)
    return helpers.attempts["needed"]


def make_early_exits_safe(
    text: str,
    helpers_with_barriers: "Helpers | Iterable[str]",
    file: str,
    line_base: int,
    kernel: str,
    *,
    exits: bool = False,
) -> str:
    """``text`` (one function definition) with its early returns made safe for named barriers.

    ``helpers_with_barriers``: a ``Helpers`` (``program_helpers(program)``), or just the names
    of the functions that synchronise (then calls to them after a return are refused).
    ``exits``: a return from this function ends the thread (a kernel body in horizontal
    fusion), so the threads that leave may exit when their warp keeps an active thread.
    A helper that some function calls after an early return gets the activity flag as an
    extra last parameter (see the module docstring).
    """
    helpers = Helpers.of(helpers_with_barriers)
    fn = _Fn(text, helpers, file, line_base, kernel)
    if not fn.is_kernel and fn.name is not None and fn.name in _needed(helpers):
        attempt = _flagged(text, helpers, file, kernel)
        if attempt.text is not None:
            return attempt.text
        # the caller that passes the flag refuses, naming both places; rewrite as usual meanwhile
    return _rewrite(fn, exits=exits and fn.is_kernel)
