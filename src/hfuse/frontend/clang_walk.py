"""How Clang's tree is walked for what the user's functions reach in the kept headers, and
what that code reads of the block (``frontend/clang.py`` parses and asks; this module walks).

A header function's definition is walked once per request (remembered by USR), through the
calls it makes into other header code; the user's own functions are not walked (hfuse
rewrites their reads), except the instances of the user's templates, whose calls Clang
resolved only there. In a template read as written, what names no code until instantiation
(a call through a template parameter, a member call or an operator on a header's object) is
recorded as unknown: never safe.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

from .clang_meaning import HeaderUse, _key
from .model import CLUSTER_READ, PTX_CLUSTER, PTX_REGISTERS, PTX_WARPGROUP, REGISTERS_SET, WARPGROUP_RUN, ptx_block_reads


BUILTIN_VARIABLES = {"threadIdx": "reads threadIdx", "blockDim": "reads blockDim",
                     "blockIdx": "reads blockIdx", "gridDim": "reads gridDim"}
BARRIER_FUNCTIONS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
                               "__barrier_sync", "__nvvm_bar_sync", "__nvvm_bar0_popc", "__nvvm_bar0_and",
                               "__nvvm_bar0_or", "__nvvm_barrier_sync", "__nvvm_barrier_sync_cnt"})
_WALK_LIMIT = 50_000
"""Header functions walked per request at most: past it the answer is 'not known', never 'safe'.
A CuTe tensor-core GEMM of SM80 atoms and cp.async copies reaches about 18,000 instances."""


def preorder(ci, cursor, pruned: Callable[[object], bool] | None = None, pruned_kind: int | None = None,
             kept: frozenset[int] | None = None) -> list:
    """``cursor`` and its descendants in preorder, as ``Cursor.walk_preorder`` gives them, in
    one pass of libclang's visitor (``walk_preorder`` asks it once per node, and makes a list
    of each node's children: five times as slow over a CuTe kernel's thousands of header
    functions). ``pruned``: the nodes (of kind ``pruned_kind``, the only ones it is asked of)
    whose descendants are left out. ``kept``: the kinds of descendant to list (None: all)."""
    unit = cursor._tu
    nodes = [cursor]
    failed: list[BaseException] = []

    def visit(child, _parent, _data) -> int:
        try:
            kind = child._kind_id
            child._tu = unit  # (keeps the unit alive while the cursor is)
            if kept is None or kind in kept:
                nodes.append(child)
            if pruned is not None and kind == pruned_kind and pruned(child):
                return 1  # CXChildVisit_Continue: not into this one
            return 2  # CXChildVisit_Recurse
        except BaseException as exc:  # (ctypes would print it and end the walk early, silently)
            failed.append(exc)
            return 0  # CXChildVisit_Break

    ci.conf.lib.clang_visitChildren(cursor, ci.cursor_visit_callback(visit), [])
    if failed:
        raise failed[0]
    return nodes


_INVALID_KINDS = frozenset(range(70, 74))
"""libclang's invalid cursor kinds (``CXCursor_FirstInvalid``..``LastInvalid``); its null cursor is one."""


def referenced(ci, node):
    """What ``node`` refers to (``Cursor.referenced``), or None: straight from libclang. The
    binding's property checks each cursor it touches for null by asking libclang twice more,
    which was most of a CuTe kernel's walk (millions of calls)."""
    found = ci.conf.lib.clang_getCursorReferenced(node)
    if found._kind_id in _INVALID_KINDS:
        return None
    found._tu = node._tu
    return found


def _is_auto(parameter_type) -> bool:
    """A generic lambda's parameter: ``auto``, ``auto&&``, ``const auto&``..."""
    return re.search(r"\bauto\b", parameter_type.spelling) is not None


def _names_nothing(cursor) -> bool:
    """A reference Clang left unresolved (in a template, until instantiation): its
    ``referenced`` is nothing or itself."""
    return cursor.referenced is None or cursor.referenced == cursor


def _unresolved(ci, cursor, found) -> bool:
    """``_names_nothing`` of ``cursor``, whose ``referenced`` is ``found``."""
    return found is None or bool(ci.conf.lib.clang_equalCursors(found, cursor))


@dataclass
class Walker:
    """What header functions read of the block, remembered per declaration (USR)."""

    ci: object
    user_files: frozenset[str]
    known: dict[str, tuple[tuple[str, ...], bool]] = field(default_factory=dict)
    walked: int = 0
    _files: dict[str, bool] = field(default_factory=dict)
    classes: tuple = ()
    functions: tuple = ()
    device_attributes: tuple = ()
    operators: tuple = ()
    referring: frozenset = frozenset()
    function_ids: frozenset = frozenset()
    broken: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Lines of the headers' code that Clang reports errors at (by file key): a function that
    holds one reads what nobody knows (``reads``), where nvcc (more lenient) compiles it."""

    def __post_init__(self) -> None:
        kinds = self.ci.CursorKind
        # the nodes that name a function, a barrier or a built-in variable (an implicit
        # conversion's call is an unexposed expression)
        self.referring = frozenset(k.value for k in (kinds.DECL_REF_EXPR, kinds.MEMBER_REF_EXPR, kinds.CALL_EXPR,
                                                     kinds.OVERLOADED_DECL_REF, kinds.UNEXPOSED_EXPR))
        self.device_attributes = (kinds.CUDADEVICE_ATTR, kinds.CUDAGLOBAL_ATTR)
        self.classes = tuple(getattr(kinds, n) for n in ("CLASS_DECL", "STRUCT_DECL", "UNION_DECL", "CLASS_TEMPLATE",
                                                           "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"))
        self.operators = (kinds.BINARY_OPERATOR, kinds.UNARY_OPERATOR, kinds.COMPOUND_ASSIGNMENT_OPERATOR)
        self.functions = tuple(getattr(kinds, n) for n in ("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR",
                                                             "FUNCTION_TEMPLATE", "CONVERSION_FUNCTION"))
        self.function_ids = frozenset(k.value for k in self.functions)

    def is_user(self, cursor) -> bool:
        location = cursor.location
        if location.is_in_system_header:
            return False  # (the kept headers are all -isystem: asked first, it spares their thousands a file look-up)
        file = location.file
        if file is None:
            return False
        name = file.name
        if name not in self._files:
            self._files[name] = _key(Path(name)) in self.user_files
        return self._files[name]

    def holds_error(self, cursor) -> bool:
        """Whether Clang reported an error inside ``cursor``'s extent (``broken``)."""
        file = cursor.extent.start.file
        lines = self.broken.get(_key(Path(file.name)), ()) if file is not None and self.broken else ()
        return any(cursor.extent.start.line <= line <= cursor.extent.end.line for line in lines)

    def definitions(self, parent, defining) -> Iterable:
        """The user's function definitions below ``parent``, descending only into what the
        user's files declare (the headers' thousands of declarations are never visited)."""
        for cursor in parent.get_children():
            if not self.is_user(cursor):
                continue
            if cursor.kind in defining:
                if cursor.is_definition():
                    yield cursor
            else:
                yield from self.definitions(cursor, defining)

    def header_object_call(self, node) -> str | None:
        """``r.sum(v)`` in a template, ``r`` made by a kept header (``auto r =
        lib::make_reducer(sh)``): a member call no declaration answers before instantiation.
        The header's name that made the object, or None."""
        ck = self.ci.CursorKind
        if node.kind != ck.CALL_EXPR or not _names_nothing(node):
            return None
        member = next(iter(node.get_children()), None)
        if member is None or member.kind != ck.MEMBER_REF_EXPR or not _names_nothing(member):
            return None
        base = next(iter(member.get_children()), None)
        variable = base.referenced if base is not None and base.kind == ck.DECL_REF_EXPR else None
        return self.made_by_header(variable) if variable is not None and variable.kind == ck.VAR_DECL else None

    def header_template_member_call(self, node) -> str | None:
        """``lib::ops<T>::apply(x)``, or ``v.get()`` of a ``typename lib::traits<T>::type v``, in a
        template: a member of a kept header's class template of a template parameter, whose
        specialisation (and so its code) is chosen at instantiation. The class template's name, or None."""
        ck = self.ci.CursorKind
        if node.kind != ck.CALL_EXPR or not _names_nothing(node):
            return None
        callee = next(iter(node.get_children()), None)
        if callee is not None and callee.kind == ck.MEMBER_REF_EXPR and _names_nothing(callee):
            base = next(iter(callee.get_children()), None)
            variable = base.referenced if base is not None and base.kind == ck.DECL_REF_EXPR else None
            if variable is None or variable.kind not in (ck.VAR_DECL, ck.PARM_DECL) \
                    or ">::" not in variable.type.spelling:
                return None  # (lib::Vec<T> v: its own members, which type_reads walks)
            callee = variable
        elif callee is None or callee.kind != ck.DECL_REF_EXPR or not _names_nothing(callee):
            return None
        for written in callee.get_children():
            template = written.referenced
            if written.kind == ck.TEMPLATE_REF and template is not None and template.location.file is not None \
                    and not self.is_user(template):
                return qualified_name(template, self.ci)
        return None

    def made_by_header(self, variable) -> str | None:
        """The kept header's function that made ``variable`` (``auto r = lib::make(sh)``), or None."""
        for inner in variable.walk_preorder():
            for target in self.targets(inner):
                if target.location.file is not None and not self.is_user(target) and target.kind in self.functions:
                    return qualified_name(target, self.ci)
        return None

    def header_operator(self, node) -> str | None:
        """``a + b`` in a template, ``a`` of a kept header's class template of a template
        parameter (``lib::Frag<T>``) or made by a header: the operator that runs is found by
        argument-dependent lookup at instantiation, and names nothing here. The header's
        class (or function that made the object), or None."""
        ck = self.ci.CursorKind
        if node.kind not in self.operators or node.type.kind != self.ci.TypeKind.DEPENDENT:
            return None
        for operand in node.get_children():
            while operand is not None and operand.kind in (ck.PAREN_EXPR, ck.UNEXPOSED_EXPR):
                operand = next(iter(operand.get_children()), None)
            variable = operand.referenced if operand is not None and operand.kind == ck.DECL_REF_EXPR else None
            if variable is None or variable.kind not in (ck.VAR_DECL, ck.PARM_DECL):
                continue
            for written in variable.get_children():
                kind = written.referenced
                if written.kind in (ck.TEMPLATE_REF, ck.TYPE_REF) and kind is not None and kind.kind in self.classes \
                        and kind.location.file is not None and not self.is_user(kind):
                    return qualified_name(kind, self.ci)
            if variable.kind == ck.VAR_DECL and "auto" in variable.type.spelling.split() \
                    and (made := self.made_by_header(variable)) is not None:
                return made  # (T v = lib::f(x) is a T: its operators are the instance's argument's)
        return None

    def template_parameter_call(self, node) -> str | None:
        """``f(x)``, ``f.apply(x)`` or ``F::apply(x)`` in a template, ``f`` of a template type
        parameter ``F``, or ``ACT_FN(x)`` of a non-type one: the name of the parameter whose
        argument's code runs, or None."""
        ck = self.ci.CursorKind
        if node.kind != ck.CALL_EXPR or (node.referenced is not None and node.referenced.kind in self.functions):
            return None  # (a call of an object refers to the object)
        if (parameter := self.through_type_parameter(node)) is not None:
            return parameter  # F::apply(x)
        callee = next(iter(node.get_children()), None)
        while callee is not None and callee.kind in (ck.UNEXPOSED_EXPR, ck.PAREN_EXPR, ck.MEMBER_REF_EXPR):
            callee = next(iter(callee.get_children()), None)  # f.apply: the object f
        if callee is None or callee.kind != ck.DECL_REF_EXPR:
            return None
        variable = callee.referenced
        if variable is not None and variable.kind == ck.TEMPLATE_NON_TYPE_PARAMETER:
            return variable.spelling  # ACT_FN(x) of template <float (*ACT_FN)(float)>
        if variable is None or variable.kind not in (ck.PARM_DECL, ck.VAR_DECL):
            return None
        # its type is the parameter itself (F, const F&, F*), not one naming it (lib::Vec<F>)
        written = re.sub(r"\b(const|volatile|__restrict__)\b|[\s&*]", "", variable.type.spelling)
        return next((c.referenced.spelling for c in variable.get_children()
                     if c.kind == ck.TYPE_REF and c.referenced is not None
                     and c.referenced.kind == ck.TEMPLATE_TYPE_PARAMETER and c.referenced.spelling == written), None)

    def instance_of_template(self, function) -> bool:
        """``reduce<float>`` of ``template <class T> T reduce(T)``: Clang instantiated its body."""
        return not self.ci.conf.lib.clang_getSpecializedCursorTemplate(function).is_null()

    def targets(self, node) -> list:
        """What ``node`` refers to: its declaration, or, for a name a template's dependent call
        leaves unresolved (``lib::block_sum<T>(v)``, ``block_sum(v)`` after ``using
        lib::block_sum;``), every declaration it may pick: each may be the one that runs."""
        ck, lib = self.ci.CursorKind, self.ci.conf.lib
        if node._kind_id != ck.OVERLOADED_DECL_REF.value:
            found = referenced(self.ci, node)
            return [] if _unresolved(self.ci, node, found) else [found]
        found, pending, seen = [], [node], set()
        while pending:
            reference = pending.pop()
            for i in range(lib.clang_getNumOverloadedDecls(reference)):
                declaration = lib.clang_getOverloadedDecl(reference, i)
                declaration._tu = reference._tu
                if declaration.kind not in (ck.UNEXPOSED_DECL, ck.USING_DECLARATION):
                    found.append(declaration)
                    continue
                # a using-declaration's shadow: the names it brings are at its own location
                where = declaration.location
                if where.file is None or (where.file.name, where.offset) in seen:
                    continue
                seen.add((where.file.name, where.offset))
                brought = self.ci.Cursor.from_location(reference._tu, where)
                if brought is not None and brought.kind == ck.OVERLOADED_DECL_REF:
                    pending.append(brought)
        return found

    def through_type_parameter(self, node) -> str | None:
        """``B::Tid()`` in a template: a call of a member of template type parameter ``B``, which
        names no declaration until the template is instantiated (PyTorch's
        ``BlockReduceSum<T, B = Block1D>`` reads ``threadIdx`` and ``blockDim`` that way). ``B``, or None."""
        ck = self.ci.CursorKind
        if node._kind_id != ck.CALL_EXPR.value or not _unresolved(self.ci, node, referenced(self.ci, node)):
            return None
        callee = next(iter(node.get_children()), None)
        if callee is None or callee.kind != ck.DECL_REF_EXPR:
            return None  # (an unresolved name's template arguments, f<T>(x), are no qualifier)
        qualifier = next(iter(callee.get_children()), None)  # the B of B::Tid
        if qualifier is not None and qualifier.kind == ck.TYPE_REF and qualifier.referenced is not None \
                and qualifier.referenced.kind == ck.TEMPLATE_TYPE_PARAMETER:
            return qualifier.referenced.spelling
        return None

    def dependent_object_call(self, node) -> bool:
        """``r.sum(v)`` or ``f(x)`` in a header template walked as written, ``r``/``f`` of a type
        that depends on a template parameter: a call no declaration answers before instantiation
        (in an instantiation Clang resolved it)."""
        ck = self.ci.CursorKind
        if node._kind_id != ck.CALL_EXPR.value or node.type.kind != self.ci.TypeKind.DEPENDENT:
            return False
        callee = next(iter(node.get_children()), None)
        while callee is not None and callee.kind in (ck.UNEXPOSED_EXPR, ck.PAREN_EXPR):
            callee = next(iter(callee.get_children()), None)
        if callee is None:
            return False
        if callee.kind == ck.MEMBER_REF_EXPR:
            return _names_nothing(callee)
        return callee.kind == ck.DECL_REF_EXPR and callee.referenced is not None and \
            callee.referenced.kind in (ck.PARM_DECL, ck.VAR_DECL, ck.FIELD_DECL)

    def is_device(self, function) -> bool:
        """``__device__`` or ``__global__`` (what device code can run), or a lambda's call
        operator: a lambda in device code is implicitly ``__host__ __device__``, with no
        attribute to see (the instance of a generic one is walked where a call names it,
        ``body_nodes``); constexpr functions, which Clang lets device code call, compute
        constants and read no built-in."""
        if any(c.kind in self.device_attributes for c in function.get_children()):
            return True
        parent = function.semantic_parent
        return parent is not None and parent.spelling.startswith("(lambda at ")

    def body_nodes(self, definition, strict: bool) -> Iterable:
        """``definition``'s nodes ``reads`` looks at, in preorder, but for the bodies of its generic lambdas
        (``[](auto x) {...}``) unless ``strict``: such a body is a template, which runs only as
        the instance a call makes of it, and each such call in the code that runs (the header
        function the lambda is handed to, as Clang instantiated it) names that instance, which
        is walked there. Walked here as written, its dependent calls (CuTe's ``upcast<N>(s, d)``
        in ``transform_layout``'s lambda) name every template of that name, patterns whose calls
        through template parameters cut the walk short, and a CuTe kernel went unknown."""
        ck = self.ci.CursorKind
        kept = self.referring | {ck.ASM_STMT.value}  # (what ``reads`` looks at)
        if strict:
            return preorder(self.ci, definition, kept=kept)
        return preorder(self.ci, definition, lambda node: node.kind == ck.LAMBDA_EXPR and any(
            c.kind == ck.PARM_DECL and _is_auto(c.type) for c in node.get_children()), ck.LAMBDA_EXPR.value, kept)

    def reads(self, declaration, strict: bool = False) -> tuple[tuple[str, ...], bool]:
        """(what it reads, whether the walk was cut short) for a header function. ``strict``:
        its walk as written stands for what runs (reached from a template read as written), so
        a call through an object of a dependent type cuts it short; elsewhere the calls that run
        are Clang's resolved ones, walked where they are made."""
        usr = ("strict:" if strict else "") + (self.ci._CXString.from_result(self.ci.conf.lib.clang_getCursorUSR(declaration))
                                               or f"{declaration.spelling}@{declaration.location}")
        if usr in self.known:
            return self.known[usr]
        self.known[usr] = ((), False)  # recursion: what is being walked reads nothing more
        found: set[str] = set()
        cut = False
        definition = declaration.get_definition() or declaration
        if not self.is_device(definition):
            return (), False  # host code: a device function cannot call it
        if self.holds_error(definition):
            self.known[usr] = ((), True)
            return (), True
        self.walked += 1
        if self.walked > _WALK_LIMIT:
            self.known[usr] = ((), True)
            return (), True
        ck = self.ci.CursorKind
        asm, decl_ref = ck.ASM_STMT.value, ck.DECL_REF_EXPR.value
        spelling = self.ci.conf.lib.clang_getCursorSpelling
        for node in self.body_nodes(definition, strict):
            kind = node._kind_id
            if kind == asm:
                text = " ".join(t.spelling for t in node.get_tokens())
                found.update(ptx_block_reads(text))
                if PTX_CLUSTER.search(text):
                    found.add(CLUSTER_READ)
                if PTX_REGISTERS.search(text):
                    found.add(REGISTERS_SET)
                if PTX_WARPGROUP.search(text):
                    found.add(WARPGROUP_RUN)
                continue
            if kind not in self.referring:
                continue  # (what names nothing that runs: types, namespaces, literals, statements)
            if self.through_type_parameter(node) is not None or (strict and self.dependent_object_call(node)):
                cut = True  # what runs is the instance's argument's member: unknown in the template
                continue
            for target in self.targets(node):
                name = self.ci._CXString.from_result(spelling(target))
                if (kind == decl_ref and name in BUILTIN_VARIABLES and target.kind == ck.VAR_DECL
                        and target.semantic_parent.kind == ck.TRANSLATION_UNIT):  # not a parameter called gridDim
                    found.add(BUILTIN_VARIABLES[name])
                elif name in BARRIER_FUNCTIONS:
                    found.add("synchronises the block")
                elif target._kind_id in self.function_ids and not self.is_user(target):
                    inner, inner_cut = self.reads(target, strict)
                    found.update(inner)
                    cut = cut or inner_cut
        self.known[usr] = (tuple(sorted(found)), cut)
        return self.known[usr]

    def type_reads(self, declaration, strict: bool = False) -> tuple[tuple[str, ...], bool]:
        """What the member functions of a header class (or class template) read of the block:
        a kernel that names ``cub::BlockLoad<...>`` constructs one, and its constructor reads
        ``threadIdx``, though the calls through a dependent type are not resolved in a template."""
        ck = self.ci.CursorKind
        if declaration.kind in (ck.TYPEDEF_DECL, ck.TYPE_ALIAS_DECL):
            declaration = declaration.underlying_typedef_type.get_declaration()
        elif declaration.kind == ck.TYPE_ALIAS_TEMPLATE_DECL:
            inner = [c for c in declaration.get_children() if c.kind == ck.TYPE_ALIAS_DECL]
            declaration = inner[0].underlying_typedef_type.get_declaration() if inner else declaration
        if declaration.kind not in self.classes or declaration.location.file is None:
            return (), False
        usr = ("strict:" if strict else "") + "type:" + (declaration.get_usr() or declaration.spelling)
        if usr in self.known:
            return self.known[usr]
        self.known[usr] = ((), False)
        definition = declaration.get_definition() or declaration
        found: set[str] = set()
        cut = False
        for member in definition.get_children():
            if member.kind in self.functions:
                inner, inner_cut = self.reads(member, strict)
                found.update(inner)
                cut = cut or inner_cut
        self.known[usr] = (tuple(sorted(found)), cut)
        return self.known[usr]


def qualified_name(cursor, ci) -> str:
    """``cub::BlockReduce::Sum``: the cursor's scopes, inline namespaces (CUB's versioned one) dropped."""
    parts = []
    is_inline = ci.conf.lib.clang_Cursor_isInlineNamespace
    while cursor is not None and cursor.kind != ci.CursorKind.TRANSLATION_UNIT:
        if cursor.spelling and not (cursor.kind == ci.CursorKind.NAMESPACE and is_inline(cursor)):
            parts.append(cursor.spelling)
        cursor = cursor.semantic_parent
    return "::".join(reversed(parts))


def header_uses(walker: Walker, cursor, start: int, uses: dict | None = None, at: int | None = None,
                seen: set | None = None, members: bool = False,
                instantiations: dict | None = None) -> tuple[HeaderUse, ...]:
    """What function ``cursor`` (the user's, or an instance of the user's kernel template)
    reaches in the kept headers, and what that reads. The instances
    of the user's own templates it calls are walked too, as Clang instantiated them, their
    findings put at the call's line (``at``): read as templates, their dependent calls
    (``r.sum(v)`` of an ``auto r = lib::make_reducer(sh)``) name nothing. Each such instance
    and its own findings (at its own lines) go to ``instantiations`` (by USR), walked once
    however often it is called: what a helper template reaches is what its instances do.
    ``members``:
    ``cursor`` is a template read as written (no instance of it was read), where what names no
    code until instantiation (such a member call, an operator on a header's object, a member of
    a header's class template of a parameter, a call through a template parameter) is recorded
    as unknown, and the header code it reaches is walked strictly (``Walker.reads``)."""
    ci = walker.ci
    ck = ci.CursorKind
    uses = {} if uses is None else uses
    seen = set() if seen is None else seen
    instantiations = {} if instantiations is None else instantiations
    for node in cursor.walk_preorder():
        if members and ((made := walker.header_object_call(node)) is not None
                        or (made := walker.header_operator(node)) is not None
                        or (made := walker.header_template_member_call(node)) is not None):
            line = at if at is not None else node.location.line
            record_use(uses, HeaderUse(made, line, (), True))
        if members and (parameter := walker.template_parameter_call(node)) is not None:
            line = at if at is not None else node.location.line
            record_use(uses, HeaderUse(parameter, line, (), True, through=parameter))
        for target in walker.targets(node):
            if target.location.file is None:
                continue
            if walker.is_user(target):
                if members and target.kind == ck.FUNCTION_TEMPLATE:
                    # a helper template a template read as written calls, read as written too
                    definition = target.get_definition()
                    if definition is not None and ("as written", definition.get_usr()) not in seen:
                        seen.add(("as written", definition.get_usr()))
                        here = at if at is not None else node.location.line
                        header_uses(walker, definition, start, uses, here, seen, members=True,
                                    instantiations=instantiations)
                elif target.kind in walker.functions and walker.instance_of_template(target):
                    definition = target.get_definition()
                    usr = target.get_usr() or target.displayname
                    if definition is not None and usr not in seen:
                        seen.add(usr)
                        own: dict = {}
                        header_uses(walker, definition, definition.extent.start.line, own, None, seen,
                                    instantiations=instantiations)
                        instantiations[usr] = (definition, own)
                    if usr in instantiations:  # (not while it is being walked: a recursive template)
                        here = at if at is not None else node.location.line
                        for use in instantiations[usr][1].values():
                            record_use(uses, replace(use, line=here))
                continue
            if target.kind in (ck.PARM_DECL, ck.TEMPLATE_TYPE_PARAMETER, ck.TEMPLATE_NON_TYPE_PARAMETER):
                continue
            qualified = qualified_name(target, ci)
            reads, cut = (), False
            if target.kind in walker.functions:
                if target.spelling in BARRIER_FUNCTIONS:
                    continue  # the user's own barriers are rewritten
                reads, cut = walker.reads(target, strict=members)
            elif target.kind in walker.classes or target.kind in (ck.TYPEDEF_DECL, ck.TYPE_ALIAS_DECL,
                                                                ck.TYPE_ALIAS_TEMPLATE_DECL):
                reads, cut = walker.type_reads(target, strict=members)
            elif node.kind == ck.DECL_REF_EXPR and target.spelling in BUILTIN_VARIABLES:
                continue  # the user's own reads of threadIdx are rewritten
            if at is not None:
                line = at
            elif not (node.location.file and walker.is_user(node)):
                line = start
            else:
                line = node.location.line
            # (a name a template leaves unresolved may pick any of its candidates: not a use of each's
            # header; nor is a namespace, which any header may reopen, c10's CUDAStream.h std)
            declared = "" if node.kind == ck.OVERLOADED_DECL_REF or target.kind == ck.NAMESPACE else \
                _key(Path(target.location.file.name))
            record_use(uses, HeaderUse(qualified, line, reads, cut, declared))
    return tuple(uses.values())


def record_use(uses: dict, use: HeaderUse) -> None:
    """Add ``use``, merged with what one line already has of the same name: what each found
    reads, and unknown where either is (a helper's findings all go to the line of its call)."""
    key = (use.qualified, use.line)
    was = uses.get(key)
    if was is None:
        uses[key] = use
        return
    uses[key] = HeaderUse(use.qualified, use.line, tuple(sorted(set(was.reads) | set(use.reads))),
                          was.unknown or use.unknown, was.file or use.file, was.through or use.through)
