"""The uniformity proof: which values every thread of the block computes alike, so that a
loop or branch around a barrier may stay control flow for the threads that returned."""
from __future__ import annotations


import tree_sitter as ts

from ...frontend.parse import declarator_name, walk
from ..cuda_syntax import called_name, is_block_sync_call, SYNC_BUILTINS
from .call_sites import offset_in_place, read_only_parameters, uniform_arguments
from .syntax import _base_identifier, _key, _LOOPS, _parameters, _PURE_CALLS, _real, _RED, _same, _TYPE_NODES, _UNIFORM_BUILTINS


_BLOCK_UNIFORM = frozenset({"group_index", "group_dim", "dim_threads", "num_threads", "size"})
"""Members of a cooperative-groups thread block whose value is its block's (``block.group_index()``
is ``blockIdx``), unlike ``thread_index()`` and ``thread_rank()``."""


class UniformityProof:
    """Mixin of ``ParsedFunction``: the proof over its parsed definition."""

    def non_uniform(self, node: ts.Node | None, uniform: set[str]) -> str | None:
        """Why ``node`` may differ between the threads of a block (None: it cannot)."""
        if node is None:
            return None
        t = node.type
        if t in _TYPE_NODES:
            return None
        if t == "identifier":
            name = node.text.decode()
            if name in self.member_writes and name in uniform:
                path, why = next(iter(self.member_writes[name].items()))
                return f"reads '{name}', whose member '{path}' {why}"
            if name in uniform or name in _UNIFORM_BUILTINS:
                return None
            if name == "threadIdx":
                return "reads threadIdx, which differs between threads"
            return f"reads '{name}', which {self.reasons.get(name, 'may differ between threads')}"
        if t == "field_expression":
            if node.child_by_field_name("operator").type == "->":
                if self._read_only_pointer(node.child_by_field_name("argument"), uniform):
                    return None
                return f"reads memory ('{self.describe(node)}')"
            root, path = _member_path(node)
            if root is not None and root in self.member_writes and root in uniform:
                for written, why in self.member_writes[root].items():
                    if _overlap(path, written):
                        return f"reads '{root}.{path}', whose member '{written}' {why}"
                return None  # another member than those written: the object's value there is unchanged
            return self.non_uniform(node.child_by_field_name("argument"), uniform)
        if t == "subscript_expression":
            if self._read_only_pointer(node.child_by_field_name("argument"), uniform):
                return self.non_uniform(node.child_by_field_name("indices"), uniform)
            return f"reads memory ('{self.describe(node)}')"
        if t == "pointer_expression" and node.child_by_field_name("operator").type == "*":
            if self._read_only_pointer(node.child_by_field_name("argument"), uniform):
                return None
            return f"reads memory ('{self.describe(node)}')"
        if t == "pointer_expression":
            return f"takes an address ('{self.describe(node)}')"
        if t == "call_expression":
            name = called_name(node)
            function = node.child_by_field_name("function")
            if function is not None and function.type == "field_expression" \
                    and function.child_by_field_name("field").text.decode() in _BLOCK_UNIFORM \
                    and function.child_by_field_name("argument").text.decode() in self.block_vars:
                return None  # a thread block's index or shape (blockIdx, blockDim): the same in all its threads
            if name in _RED:
                return None  # the same result in every thread of the block
            if name == "__ldg":  # a load through the read-only cache: data no one writes during the kernel
                args = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
                address = args[0] if len(args) == 1 else None
                if address is not None and address.type == "pointer_expression" and \
                        address.child_by_field_name("operator").type == "&" and \
                        address.child_by_field_name("argument").type == "subscript_expression":
                    address = address.child_by_field_name("argument")  # &p[i]: p and i
                if address is not None and address.type in ("subscript_expression", "binary_expression", "identifier"):
                    return self.non_uniform(address, uniform) if address.type != "subscript_expression" else (
                        self.non_uniform(address.child_by_field_name("argument"), uniform)
                        or self.non_uniform(address.child_by_field_name("indices"), uniform))
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

    def _read_only_pointer(self, node: ts.Node | None, uniform: set[str]) -> bool:
        """Whether ``node`` is a uniform pointer into memory nothing writes while the function
        runs: a ``const T* __restrict__`` parameter it never assigns, or such a parameter plus
        or minus a uniform offset (``call_sites.py``)."""
        while node is not None and node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        if node is None:
            return False
        if node.type == "identifier":
            return node.text.decode() in self.read_only and node.text.decode() in uniform
        if node.type == "binary_expression" and node.child_by_field_name("operator").type in ("+", "-"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            return self._read_only_pointer(left, uniform) and self.non_uniform(right, uniform) is None
        return False

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
        passed = frozenset() if self.is_kernel else uniform_arguments(self.helpers, self.name)
        for index, param in enumerate(_real(self.params.named_children) if self.params is not None else []):
            name = declarator_name(param.child_by_field_name("declarator")) if param.child_by_field_name("declarator") else None
            if name is None:
                continue
            declared[name.text.decode()] = "param"
            if not self.is_kernel and index not in passed:
                bad[name.text.decode()] = "is a parameter of a __device__ function (callers may pass different values per thread)"
        defs: list[tuple[str, list[ts.Node], ts.Node]] = []
        # a parameter -> its members the body changes (not the parameter as a whole) -> how
        member_writes: dict[str, dict[str, str]] = {}
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
                    root, path = _member_path(left.child_by_field_name("argument"))
                    if root is not None and path and declared.get(root) == "param":
                        # ``params.out[i] = v`` writes an element of one member of a parameter (memory it
                        # points to, or its own array): its other members keep their values (parameters
                        # only, structs of pointers and sizes as kernels take them; a local union's
                        # members share storage)
                        member_writes.setdefault(root, {}).setdefault(path, f"is written element-wise at line {self.line(node)}")
                    else:
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
                self._taint_call(node, bad, member_writes, declared)
        for name, _, where in defs:
            if name not in declared and name not in bad:
                bad[name] = f"is assigned at line {self.line(where)} and is not a local of the function"
        uniform = names - set(bad)
        reasons = dict(bad)
        self.member_writes = {root: paths for root, paths in member_writes.items() if root in uniform}
        # (a parameter moved along its object, ``p += image * stride``, still points into read-only memory)
        self.read_only = set(read_only_parameters(self.params, self.body)) - {
            name for name, _, where in defs if not offset_in_place(where)}
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

    def _taint_call(self, call: ts.Node, bad: dict[str, str], member_writes: dict[str, dict[str, str]],
                    declared: dict[str, str]) -> None:
        """Locals a call may change: passed as a bare name (unless the callee takes it by value)
        or the object of a member call; a parameter's member passed so changes that member only."""
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
            if base is None or not self._by_reference(name, index, len(args)):
                continue
            root, path = _member_path(arg)
            if root is not None and path and declared.get(root) == "param":
                member_writes.setdefault(root, {}).setdefault(
                    path, f"is passed to '{name or self.describe(call)}' at line {self.line(call)}, which may take it by reference")
            else:
                bad.setdefault(base.text.decode(), f"is passed to '{name or self.describe(call)}' at line {self.line(call)}, "
                                                   "which may take it by reference")

    def _by_reference(self, name: str | None, index: int, count: int) -> bool:
        """Whether a definition by that name that a call of ``count`` arguments may call takes
        its argument ``index`` by reference (or hfuse cannot tell)."""
        definitions = self.helpers.definitions(name) if name else ()
        candidates = [params for text in definitions
                      # (an overload of fewer parameters than the call's arguments is not the callee)
                      if (params := _parameters(text)) is None or len(params) >= count]
        return not candidates or any(params is None or "&" in params[index] for params in candidates)


def _member_path(node: ts.Node | None) -> tuple[str | None, str]:
    """``("params", "a.b")`` of ``params.a.b`` (``("x", "")`` of ``x``); ``(None, "")`` where the
    chain holds anything but ``.`` members of a name."""
    members: list[str] = []
    while node is not None:
        if node.type == "identifier":
            return node.text.decode(), ".".join(reversed(members))
        if node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        elif node.type == "field_expression" and node.child_by_field_name("operator").type == "." \
                and (field := node.child_by_field_name("field")) is not None and field.type == "field_identifier":
            members.append(field.text.decode())
            node = node.child_by_field_name("argument")
        else:
            return None, ""
    return None, ""


def _overlap(path: str, written: str) -> bool:
    """Whether member ``path`` holds or is held by the written member ``written``."""
    return path == written or path.startswith(written + ".") or written.startswith(path + ".")

