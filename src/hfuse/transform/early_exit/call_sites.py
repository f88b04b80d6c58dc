"""What the callers of a helper give it alike in every thread, and memory no thread changes.

The uniformity proof (``uniformity.py``) takes a ``__device__`` function's parameters as
per-thread values: a caller may pass ``threadIdx.x``. Libraries often put a kernel's whole
body in such a helper, called by thin ``__global__`` wrappers with the kernel's own
parameters (vLLM's paged attention: ``paged_attention_kernel<...>(nullptr, out, q, ...,
seq_lens, ...)`` from ``paged_attention_v1_kernel``), and its early return then reads
``seq_lens[blockIdx.y]``. Two facts make such a return block-uniform:

* **uniform arguments**: a parameter is uniform when every call of the helper in the
  program passes it an expression of values every thread holds alike: literals,
  ``nullptr``, ``blockIdx``/``blockDim``/``gridDim``, names the caller does not declare
  (constants, template parameters), the caller's own parameters where the caller is a
  kernel that never assigns them, or a helper whose callers in turn pass them uniform
  arguments. A local of the caller, a memory read, an address or a call (other than the
  pure ones) is not followed: the parameter stays per-thread. Calls are matched by the
  helper's plain name, so a same-named function's calls count too (that can only prove
  less).
* **read-only memory**: a pointer parameter declared ``const T* __restrict__`` points at
  memory that nothing writes while the function runs (what ``__restrict__`` promises the
  compiler, which caches such loads on that promise). Loaded at a uniform index through
  a uniform pointer it gives every thread the same value: ``seq_lens[seq_idx]``,
  ``*(p + k)``, ``p->n``.
"""
from __future__ import annotations

import tree_sitter as ts

from ...frontend.parse import declarator_name, parse, walk
from ..cuda_syntax import called_name
from ..program_functions import Helpers
from .syntax import _function, _function_declarator, _parameters, _plain_name, _PURE_CALLS, _real, _TYPE_NODES, \
    _UNIFORM_BUILTINS

_RESTRICT = frozenset({"__restrict__", "__restrict", "restrict"})
_LOADS = frozenset({"__ldg", "min", "max"})
"""Calls that only read their arguments' values (a pointer given to one is not written through)."""


def read_only_parameters(params: ts.Node | None, body: ts.Node | None = None) -> list[str]:
    """The parameters declared as a pointer to const with ``__restrict__`` (one level) that
    ``body`` neither casts (``const_cast``, ``(int*)p``: it could write through them), copies
    into another pointer nor hands to a call (that could)."""
    handed = {n.text.decode() for n in (walk(body) if body is not None else ()) if n.type == "identifier"
              and (holder := _pointer_holder(n)) is not None
              and holder.type in ("cast_expression", "argument_list", "init_declarator", "assignment_expression")
              and not (holder.type == "argument_list" and called_name(holder.parent) in _LOADS)
              and not offset_in_place(holder, n)}
    found = []
    for param in _real(params.named_children) if params is not None else []:
        declarator = param.child_by_field_name("declarator")
        const = any(c.type == "type_qualifier" and c.text.decode() == "const" for c in param.children)
        if not const or declarator is None or declarator.type != "pointer_declarator":
            continue
        inner = declarator.child_by_field_name("declarator")
        restrict = any(c.type == "type_qualifier" and c.text.decode() in _RESTRICT for c in declarator.children)
        if restrict and inner is not None and inner.type == "identifier" and inner.text.decode() not in handed:
            found.append(inner.text.decode())
    return found


def offset_in_place(assignment: ts.Node, name: ts.Node | None = None) -> bool:
    """Whether ``assignment`` moves a pointer along its own object (``p += i * n``, ``p -= k``;
    ``name``: the pointer is its left side): it still points into what it pointed into."""
    if assignment.type != "assignment_expression" or assignment.child_by_field_name("operator").type not in ("+=", "-="):
        return False
    left = assignment.child_by_field_name("left")
    return left.type == "identifier" and (name is None or left.start_byte == name.start_byte)


def _pointer_holder(node: ts.Node) -> ts.Node | None:
    """What takes ``node`` as a pointer value (``f(p)``, ``f(p + 1)``, ``(int*)p``, ``q = p``), past
    parentheses and pointer arithmetic; a load through it (``p[i]``, ``*p``) is no hand-over."""
    current = node.parent
    while current is not None and (current.type == "parenthesized_expression" or (
            current.type == "binary_expression" and current.child_by_field_name("operator").type in ("+", "-"))):
        current = current.parent
    return current


def uniform_arguments(helpers: Helpers, name: str | None) -> frozenset[int]:
    """The positions of ``name``'s parameters every call in the program passes a uniform value."""
    memo = helpers.attempts.setdefault("uniform arguments", {})
    return _uniform_arguments(helpers, name, memo, frozenset())


def _uniform_arguments(helpers: Helpers, name: str | None, memo: dict, seen: frozenset[str]) -> frozenset[int]:
    if name is None or name in seen:
        return frozenset()  # (a recursive helper: nothing is proven of its parameters)
    if name in memo:
        return memo[name]
    definitions = helpers.definitions(name)
    counts = [len(p) for p in map(_parameters, definitions) if p is not None]
    if not counts or len(counts) < len(definitions):
        memo[name] = frozenset()
        return memo[name]
    uniform = set(range(max(counts)))
    called = False
    for text in dict.fromkeys(t for texts in helpers.texts.values() for t in texts):
        if name.encode() not in text.encode():
            continue
        caller = _Caller.of(text)
        if caller is None:
            continue
        for call in (n for n in walk(caller.body) if n.type == "call_expression" and called_name(n) == name):
            called = True
            args = _real(call.child_by_field_name("arguments").named_children)
            uniform -= set(range(len(args), max(counts)))  # a default argument: not followed
            for index, arg in enumerate(args):
                if index in uniform and not caller.passes_uniform(arg, helpers, memo, seen | {name}):
                    uniform.discard(index)
    memo[name] = frozenset(uniform) if called else frozenset()
    return memo[name]


class _Caller:
    """A function that calls the helper: its parameters and the names it declares."""

    def __init__(self, definition: ts.Node, body: ts.Node, data: bytes):
        self.body = body
        declarator = _function_declarator(definition)
        self.name = _plain_name(declarator.child_by_field_name("declarator")) if declarator is not None else None
        params = declarator.child_by_field_name("parameters") if declarator is not None else None
        self.params = [name.text.decode() if (d := p.child_by_field_name("declarator")) is not None
                       and (name := declarator_name(d)) is not None else None
                       for p in (_real(params.named_children) if params is not None else [])]
        self.is_kernel = b"__global__" in data[definition.start_byte: body.start_byte]
        # every name the body declares, in any form (locals, a range for's, structured bindings,
        # a lambda's parameters): each may hide a parameter or a file-scope constant
        self.declared = {n.text.decode() for n in walk(body) if n.type == "identifier" and (parent := n.parent)
                         is not None and (parent.type in ("structured_binding_declarator", "reference_declarator")
                                          or parent.child_by_field_name("declarator") == n)}
        self.assigned = {n.text.decode() for node in walk(body) if node.type in ("assignment_expression",
                                                                                  "update_expression")
                         for n in walk(node.child_by_field_name("left") or node.child_by_field_name("argument"))
                         if n.type == "identifier"}

    @classmethod
    def of(cls, text: str) -> "_Caller | None":
        data = text.encode()
        definition = _function(parse(data).root_node)
        body = definition.child_by_field_name("body") if definition is not None else None
        return cls(definition, body, data) if body is not None else None

    def passes_uniform(self, node: ts.Node, helpers: Helpers, memo: dict, seen: frozenset[str]) -> bool:
        t = node.type
        if t in _TYPE_NODES:
            return True
        if t == "identifier":
            name = node.text.decode()
            if name in _UNIFORM_BUILTINS:
                return True
            if name in self.declared or name in self.assigned:
                return False  # a local (one may hide a parameter), or a name the caller changes
            if name in self.params:
                return self.is_kernel or self.params.index(name) in _uniform_arguments(helpers, self.name, memo, seen)
            return name != "threadIdx"
        if t == "field_expression":
            return node.child_by_field_name("operator").type == "." and \
                self.passes_uniform(node.child_by_field_name("argument"), helpers, memo, seen)
        if t == "call_expression":
            args = node.child_by_field_name("arguments")
            return called_name(node) in _PURE_CALLS and args is not None and \
                all(self.passes_uniform(a, helpers, memo, seen) for a in _real(args.named_children))
        if t in ("parenthesized_expression", "binary_expression", "unary_expression", "conditional_expression",
                 "cast_expression", "static_cast_expression"):
            return all(self.passes_uniform(c, helpers, memo, seen) for c in _real(node.named_children))
        return False
