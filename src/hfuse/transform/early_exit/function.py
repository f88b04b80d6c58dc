"""One function definition, parsed once, with what the rewrite asks of its statements."""
from __future__ import annotations

from functools import cached_property

import tree_sitter as ts

from ...frontend.parse import declarator_name, line_of, parse, walk
from ...errors import HFuseError, Location
from ..cuda_syntax import (called_name, cg_block_variables, gives_the_block, is_block_sync_call, is_cg_sync_call,
                           is_cg_wait_call, SYNC_BUILTINS)
from ..program_functions import Helpers
from .plan import RegionPlanner
from .syntax import _function, _function_declarator, _HINT, _plain_name, _PURE_CALLS, _real, _RED, _TYPE_NODES
from .uniformity import UniformityProof




class ParsedFunction(UniformityProof, RegionPlanner):
    """One function, parsed, with what the rewrite needs to know about it."""

    def __init__(self, text: str, helpers: Helpers, file: str, line_base: int, kernel: str, flagged: bool = False):
        self.text = text
        self.data = text.encode()
        self.tree = parse(self.data)
        definition = _function(self.tree.root_node)
        if definition is None:
            raise HFuseError("hfuse cannot find a function definition here", Location(file, line_base + 1, kernel))
        self.definition = definition
        self.body = definition.child_by_field_name("body")
        self.helpers = helpers
        self.file, self.line_base, self.kernel = file, line_base, kernel
        self.flagged = flagged
        head = self.data[self.definition.start_byte : self.body.start_byte]
        self.is_kernel = b"__global__" in head
        declarator = _function_declarator(self.definition)
        self.name = _plain_name(declarator.child_by_field_name("declarator")) if declarator is not None else None
        self.params = declarator.child_by_field_name("parameters") if declarator is not None else None
        self.block_vars = cg_block_variables(self.definition, helpers.cg)
        # types with a member that synchronises (``Sync::operator()``), the objects of them here,
        # and the local lambdas that synchronise: calling one, or giving one to a call, is a barrier
        self.sync_types = helpers.barrier_types
        self.sync_objects = {name.text.decode() for node in walk(self.definition)
                             if node.type in ("declaration", "parameter_declaration")
                             and (kind := node.child_by_field_name("type")) is not None and self._names_sync_type(kind)
                             for d in node.children_by_field_name("declarator") if (name := declarator_name(d)) is not None}
        self.sync_lambdas: set[str] = set()
        self.sync_lambdas = self._synchronising_lambdas()
        self.first_return: ts.Node | None = None
        self.uniform: set[str] = set()
        self.reasons: dict[str, str] = {}
        self.read_only: set[str] = set()
        """``const T* __restrict__`` parameters the function never assigns (``call_sites.py``)."""
        self.member_writes: dict[str, dict[str, str]] = {}
        """Parameters changed only in members (``params.out[i] = v``, ``f(params.n)`` by reference):
        the changed member paths (``out``) and how; their other members keep their values."""

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
        return (name in SYNC_BUILTINS or name in self.helpers.barriers or self._is_cg_barrier(node)
                or is_block_sync_call(node, self.block_vars) or name in self.sync_lambdas
                or self._passes_a_barrier(node))

    def _passes_a_barrier(self, call: ts.Node) -> bool:
        """A call given a lambda or an object that synchronises (``apply(sync)``, ``apply([&] {
        __syncthreads(); })``, ``run(Sync{})``) or made of one (``sync()`` of a functor,
        ``Sync()()``): the callee may run its barrier."""
        fn, args = call.child_by_field_name("function"), call.child_by_field_name("arguments")
        if fn is not None and (self._names_sync_type(fn) or (fn.type == "identifier" and fn.text.decode() in self.sync_objects)):
            return True
        return args is not None and any(
            (a.type == "identifier" and a.text.decode() in self.sync_lambdas | self.sync_objects)
            or (a.type == "lambda_expression" and self.reaches(a)) or self._names_sync_type(a)
            for a in args.named_children)

    def _names_sync_type(self, node: ts.Node) -> bool:
        return bool(self.sync_types) and any(n.type in ("type_identifier", "identifier", "namespace_identifier")
                                             and n.text.decode() in self.sync_types for n in walk(node))

    def _synchronising_lambdas(self) -> set[str]:
        """The function's local lambdas whose bodies synchronise (``auto sync = [&] {
        __syncthreads(); };``): calling one is a barrier (a fixed point: one may call another)."""
        lambdas = {}
        for node in walk(self.body):
            if node.type == "init_declarator" and (value := node.child_by_field_name("value")) is not None \
                    and value.type == "lambda_expression" and (name := declarator_name(node)) is not None:
                lambdas[name.text.decode()] = value.child_by_field_name("body")
        found: set[str] = set()
        while True:
            self.sync_lambdas = found
            more = {name for name, body in lambdas.items() if name not in found and body is not None and self.reaches(body)}
            if not more:
                return found
            found = found | more

    def reaches(self, node: ts.Node) -> bool:
        return any(self.is_barrier_call(n) for n in walk(node))

    def is_plain_barrier(self, statement: ts.Node) -> bool:
        if statement.type != "expression_statement" or not statement.named_children:
            return False
        call = statement.named_children[0]
        if call.type != "call_expression" or not self.is_barrier_call(call):
            return False
        return (called_name(call) == "__syncthreads" or self._is_cg_barrier(call)
                or is_block_sync_call(call, self.block_vars))

    def _is_cg_barrier(self, call: ts.Node) -> bool:
        """``cg::sync(g)``, ``cg::wait(g)``, ``cg::wait_prior<N>(g)`` (a thread with no copies of
        its own waits for none, then meets the others at the group's barrier); called by the
        name alone where the program has a function of that name too, only if given the block."""
        fn = call.child_by_field_name("function")
        if fn is not None and fn.type != "qualified_identifier" and called_name(call) in self.helpers.texts \
                and not gives_the_block(call, self.block_vars):
            return False
        return is_cg_sync_call(call, self.helpers.cg) or is_cg_wait_call(call, self.helpers.cg)

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
