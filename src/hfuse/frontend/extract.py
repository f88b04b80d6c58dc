"""Build the model of one file from its tree-sitter tree."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from .model import (FUNCTION_POINTER, INITIALISERS, INLINE, ClassShape, Function, FunctionKind, Param, Scope,
                    SourceFile, TopLevelItem, qualify)
from .parse import (compact, declarator_name, declares_function_pointer, inner_declarator, kernel_attribute, line_of,
                    parse, read_source_file, walk)
from .options import NO_OPTIONS, CompileOptions
from .preprocess import library_header_dirs, preprocess

_TYPE_DEFINING = {"struct_specifier", "class_specifier", "union_specifier", "enum_specifier"}
_DEFINES_CLASS = re.compile(r"\s*(?:template\s*<[^;{]*>\s*)?(?:struct|class|union)\b[^;]*\{")


Origin = Callable[[int], tuple[Path, int]]
"""Line of the expanded text (1-based) -> (file, line) it came from."""


def load_source(path: str | Path, text: str | None = None, options: CompileOptions = NO_OPTIONS,
                instances: Sequence[str] = ()) -> SourceFile:
    """Read (unless ``text`` is given), preprocess as nvcc would, parse and model one file.

    ``instances``: template arguments a request gives this file's kernels, expanded with
    the file's macros into ``SourceFile.instances``."""
    path = Path(path)
    if text is None:
        text = read_source_file(path)
    pre = preprocess(text, path, options, expand=instances)
    source = model_source(path, pre.text, pre.origin)
    source.headers = tuple(pre.headers)
    source.kept_includes = tuple(pre.kept_includes)
    source.kept_preamble = pre.kept_preamble
    source.library_macros = pre.library_macros
    source.library_dirs = library_header_dirs(options)
    source.value_macros = tuple(pre.value_macros)
    source.instances = dict(zip(instances, pre.expansions))
    source.arch_macros = pre.arch_macros
    source.user_macros = pre.user_macros
    source.arch = options.arch
    return source


def model_source(path: Path, text: str, origin: Origin | None = None) -> SourceFile:
    data = text.encode()
    tree = parse(data)
    source = SourceFile(path=path, text=text)
    where = origin or (lambda line: (path, line))
    source.items = _members_defined_outside(_scope_items(tree.root_node.children, data, where, ()))
    return source


def _members_defined_outside(items: list[TopLevelItem]) -> list[TopLevelItem]:
    """Out-of-class member definitions (``__device__ float Tile::swap(int j) const {...}``)
    of the classes the file defines: each stays an item of its own, where it was written,
    its function a member of that class (``Function.defined_outside``), and it is one of its
    class's members too, so what it reads of the block makes the class a context type."""
    classes = {key: i for i, item in enumerate(items) if item.kind == "declaration" and _DEFINES_CLASS.match(item.text)
               for key in item.keys}
    members: dict[int, list[Function]] = {}
    for i, item in enumerate(items):
        fn = item.function
        if fn is None or fn.owner or fn.kind == "global" or "::" not in fn.name:
            continue
        qualifier, name = (p.strip() for p in re.sub(r"<[^<>]*>", "", fn.name).rsplit("::", 1))
        owner = next((classes[key] for depth in range(len(item.scope), -1, -1)
                      if (key := qualify(item.scope[:depth], qualifier)) in classes), None)
        if owner is None or not (name.isidentifier() or name.startswith("operator")):
            continue  # a namespace's function defined with its qualified name, or a nested class's member
        klass = items[owner]
        member = replace(fn, name=name, scope=klass.scope, owner=qualifier.rsplit("::", 1)[-1], defined_outside=True)
        items[i] = replace(item, function=member)
        members.setdefault(owner, []).append(member)
    for owner, found in members.items():
        items[owner] = replace(items[owner], members=(*items[owner].members, *found))
    return items


def _scope_items(nodes: list[ts.Node], data: bytes, where: Origin, scope: Scope) -> list[TopLevelItem]:
    items: list[TopLevelItem] = []
    for node in nodes:
        if node.type == ";" and items:
            # ``struct X { ... };`` parses as the struct and a lone ';': keep them together,
            # or merging files would drop the second file's ';' as a duplicate.
            items[-1] = replace(items[-1], text=items[-1].text + ";")
            continue
        items.extend(_items(node, data, where, scope))
    return items


def _text(node: ts.Node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode()


def _inside_braces(body: ts.Node | None) -> list[ts.Node]:
    return [c for c in body.children if c.type not in ("{", "}")] if body is not None else []


def _namespace_names(node: ts.Node) -> tuple[str, ...]:
    """``namespace a::b {`` -> ("a", "b"); ``namespace {`` -> ("",); ``inline namespace v2 {``
    -> ("inline v2",); ``namespace a::inline b {`` -> ("a", "inline b")."""
    name = node.child_by_field_name("name")
    if name is None:
        named = [c for c in node.named_children if c.type in ("namespace_identifier", "nested_namespace_specifier", "identifier")]
        name = named[0] if named else None
    inline = any(c.type == "inline" or (not c.is_named and c.text == b"inline") for c in node.children)
    if name is None:
        return ("",)
    names = [re.sub(r"^inline\s+", INLINE, p.strip()) for p in name.text.decode().split("::") if p.strip()]
    if inline and names:
        names[0] = INLINE + names[0]
    return tuple(names)


def _items(node: ts.Node, data: bytes, where: Origin, scope: Scope) -> list[TopLevelItem]:
    text = _text(node, data)
    path, line = where(line_of(node))
    if node.type == "comment":
        return []
    if node.type == "preproc_include":
        return [TopLevelItem("include", text.strip(), (), path, line, scope=scope)]
    if node.type == "namespace_definition":
        body = node.child_by_field_name("body")
        inner = scope + _namespace_names(node)
        return _scope_items(_inside_braces(body), data, where, inner)
    if node.type == "linkage_specification":
        body = node.child_by_field_name("body")
        if body is not None and body.type == "function_definition":
            try:
                fn = _function(node, body, data, where, scope, extern_c=True)
            except HFuseError:
                if _function_kind(body) != "host":
                    raise
                return [TopLevelItem("other", text, (), path, line, scope=scope, device=False)]
            return [_function_item(node, fn, data, path, line, scope)]
        if body is not None and body.type == "declaration_list":
            return _scope_items(_inside_braces(body), data, where, scope)
    if node.type == "using_declaration" and any(c.type == "namespace" for c in node.children):
        target = compact(node.named_children[-1].text.decode()) if node.named_children else ""
        return [TopLevelItem("using", text, (), path, line, scope=scope, nominates=target)]
    if node.type == "namespace_alias_definition":
        alias, target = node.named_children[0].text.decode(), compact(node.named_children[-1].text.decode())
        return [TopLevelItem("using", text, (alias,), path, line, scope=scope, nominates=target)]
    definition = node
    if node.type == "template_declaration":
        # a comment may come first, a C++20 requires-clause after the parameters
        inner = [c for c in node.named_children if c.type not in ("template_parameter_list", "comment", "requires_clause")]
        while inner and inner[0].type == "template_declaration":
            # ``template <> template <class T> R Get<0>::of(const T&)``: a member template of a
            # class template's explicit specialisation, defined outside it
            inner = [c for c in inner[0].named_children
                     if c.type not in ("template_parameter_list", "comment", "requires_clause")]
        if inner and inner[0].type == "function_definition":
            definition = inner[0]
    if definition.type == "function_definition":
        try:
            fn = _function(node, definition, data, where, scope)
        except HFuseError:
            if _function_kind(definition) != "host":
                raise
            # host code the model cannot read never reaches the fused file anyway
            return [TopLevelItem("other", text, (), path, line, scope=scope, device=False)]
        return [_function_item(node, fn, data, path, line, scope)]
    if node.type in ("declaration", "type_definition", "alias_declaration", "using_declaration") or (
        node.type in _TYPE_DEFINING
    ) or node.type == "template_declaration":
        return [
            TopLevelItem(
                "declaration", text, _declared_names(node), path, line, scope=scope, device=_device_declaration(node),
                references=_references(node), members=_members(node, data, where, scope),
                classes=_classes(node),
            )
        ]
    return [TopLevelItem("other", text, (), path, line, scope=scope, references=_references(node))]


def _function_item(node: ts.Node, fn: Function, data: bytes, path: Path, line: int, scope: Scope) -> TopLevelItem:
    return TopLevelItem(
        "function", _text(node, data), (fn.name,), path, line, fn, scope=scope,
        device=fn.kind != "host" or _constexpr(fn),
        references=_references(node),
    )


_DEVICE_WORDS = {"__device__", "__global__", "__constant__", "__shared__", "__managed__", "constexpr", "const"}


def _device_declaration(node: ts.Node) -> bool:
    """Whether device code may use what ``node`` declares.

    Types, templates and constants are usable on both sides; a function prototype is a
    device one only with ``__device__``/``__global__``; a mutable variable without a
    device storage class is host memory, out of device code's reach.
    """
    if node.type != "declaration":
        return True
    words = {c.text.decode() for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
    words |= {c.type for c in node.children if not c.is_named}
    prototype = any(
        d.type == "function_declarator" or d.child_by_field_name("declarator") is not None
        and d.child_by_field_name("declarator").type == "function_declarator"
        for d in node.children_by_field_name("declarator")
    )
    if prototype:
        return bool(words & {"__device__", "__global__"})
    return bool(words & _DEVICE_WORDS) or not node.children_by_field_name("declarator")


_REFERENCE_TYPES = ("identifier", "type_identifier", "namespace_identifier")


def _written(text: bytes) -> str:
    """A qualified name as written, without spaces or the ``template`` keyword of
    ``T::template apply<U>``."""
    return compact(re.sub(r"\btemplate\b", "", text.decode()))


def _references(node: ts.Node) -> frozenset[str]:
    """Every name ``node`` mentions: plain ones, and qualified ones as written (no spaces)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "qualified_identifier":
            head = current.child_by_field_name("scope")
            if head is not None:
                stack.append(head)
            # each qualified prefix too: ``detail::Plain<float>::width`` names ``detail::Plain``
            link = current.child_by_field_name("name")
            while link is not None and link.type == "qualified_identifier":
                scope = link.child_by_field_name("scope")
                if scope is not None:
                    found.add(_written(current.text[:scope.end_byte - current.start_byte]))
                    stack.extend(scope.children_by_field_name("arguments"))
                link = link.child_by_field_name("name")
            found.add(_written(current.text))
            if link is not None and link.type != "identifier":
                stack.append(link)  # template arguments of the last component
            continue
        if current.type in _REFERENCE_TYPES:
            found.add(current.text.decode())
        elif current.type == "primitive_type" and current.text.endswith(b"_t"):
            found.add(current.text.decode())  # int64_t, size_t: the grammar's primitives, a header's typedefs
        elif current.type == "offsetof_expression":
            found.add("offsetof")  # a macro of stddef.h the grammar reads as a keyword
        elif current.type in ("__extension__", "__asm__", "__volatile__"):
            found.add(current.type)  # GNU's keywords, which NVRTC does not know (codegen/includes.py)
        stack.extend(current.children)
    return frozenset(found)


def _members(node: ts.Node, data: bytes, where: Origin, scope: Scope) -> tuple[Function, ...]:
    """Member functions defined inside the struct/class bodies that ``node`` holds."""
    members: list[Function] = []
    for spec in walk(node):
        if spec.type not in ("struct_specifier", "class_specifier", "union_specifier"):
            continue
        body = spec.child_by_field_name("body")
        name = spec.child_by_field_name("name")
        if body is None or name is None:
            continue
        owner = name.text.decode().split("<")[0].strip()
        if (initialisers := _member_initialisers(body, data, where, scope, owner)) is not None:
            members.append(initialisers)
        for member in body.named_children:
            definition = member
            if member.type == "template_declaration":
                inner = [c for c in member.named_children if c.type in ("function_definition", "friend_declaration")]
                definition = inner[0] if inner else member
            friend = definition.type == "friend_declaration"
            if friend:  # a hidden friend: a function of the namespace that only argument-dependent lookup finds
                definition = next((c for c in definition.named_children if c.type == "function_definition"), definition)
            if definition.type == "function_definition":
                try:
                    fn = _function(member, definition, data, where, scope, owner=owner)
                    if friend:  # (its text is analysed as a function of its own: 'friend' belongs to the class)
                        fn = replace(fn, text=re.sub(r"\bfriend\s+", "", fn.text, count=1), hidden_friend=True)
                    members.append(fn)
                except HFuseError:
                    continue  # a member we cannot model (operator forms the grammar splits oddly)
    return tuple(members)


def _member_initialisers(body: ts.Node, data: bytes, where: Origin, scope: Scope, owner: str) -> Function | None:
    """The default member initialisers of a class body (``int lane = threadIdx.x & 31;``) as
    one member function of its own (``INITIALISERS``), analysed like any other: code that
    runs in every object's construction, so what it reads of the block makes the class a
    context type. Each initialiser keeps its line. None: the class has none."""
    fields = [f for f in body.named_children if f.type == "field_declaration"
              and f.child_by_field_name("default_value") is not None
              and not any(c.type == "storage_class_specifier" for c in f.children)]  # (a static's is no object's)
    if not fields:
        return None
    first = line_of(fields[0])
    lines = [""] * (line_of(fields[-1]) - first + 1)
    for field in fields:
        lines[line_of(field) - first] += f" auto hf_init = {_text(field.child_by_field_name('default_value'), data)};"
    path, line = where(first)
    text = "__device__ void hfuse_member_initialisers() {" + "\n".join(lines) + " }"
    return Function(name=INITIALISERS, kind="device", file=path, line=line, text=text, params=(), scope=scope,
                    owner=owner)


def _classes(node: ts.Node) -> tuple[ClassShape, ...]:
    """Each class ``node`` defines with bases or data members: the bases its members'
    unqualified names are looked up in, as written (a dependent base, ``Base<T>`` with ``T``
    of an enclosing template, is left out: C++ does not look there), and its data members."""
    found = []
    for spec in walk(node):
        name, body = spec.child_by_field_name("name"), spec.child_by_field_name("body")
        if spec.type not in ("struct_specifier", "class_specifier", "union_specifier") or name is None or body is None:
            continue
        params: set[str] = set()
        current = spec.parent
        while current is not None:
            if current.type == "template_declaration":
                plist = current.child_by_field_name("parameters")
                params.update(template_param_name(p) for p in plist.named_children if p.type != "comment")
            current = current.parent
        clause = next((c for c in spec.children if c.type == "base_class_clause"), None)
        bases = tuple(compact(base.text.decode()) for base in (clause.named_children if clause else ())
                      if base.type not in ("access_specifier", "comment")
                      and not {n.text.decode() for n in walk(base) if n.type in _REFERENCE_TYPES} & params)
        members = [(n.text.decode(), FUNCTION_POINTER if pointer else compact(written.text.decode()))
                   for f in body.named_children if f.type == "field_declaration"
                   and (written := f.child_by_field_name("type")) is not None
                   for d in f.children_by_field_name("declarator")
                   for pointer in [declares_function_pointer(f, d)]
                   if (d.type != "function_declarator" or pointer) and (n := declarator_name(d)) is not None]
        if bases or members or params:
            found.append(ClassShape(name.text.decode().split("<")[0].strip(), bases, tuple(m for m, _ in members),
                                    tuple(sorted(p for p in params if p)), tuple(t for _, t in members)))
    return tuple(found)


def _enumerators(node: ts.Node) -> list[str]:
    """The constants an enum in ``node`` declares, as code names them: ``RED`` for a plain
    enum (they belong to the enclosing scope), ``Color::RED`` for an ``enum class``."""
    enums = [node] if node.type == "enum_specifier" else [c for c in node.named_children if c.type == "enum_specifier"]
    out = []
    for enum in enums:
        body = enum.child_by_field_name("body")
        if body is None:
            continue
        scoped = any(c.type in ("class", "struct") for c in enum.children)
        owner = enum.child_by_field_name("name")
        for constant in body.named_children:
            name = constant.child_by_field_name("name") if constant.type == "enumerator" else None
            if name is None:
                continue
            out.append(f"{owner.text.decode()}::{name.text.decode()}" if scoped and owner is not None else name.text.decode())
    return out


def _declared_names(node: ts.Node) -> tuple[str, ...]:
    names: list[str] = _enumerators(node)
    if node.type in _TYPE_DEFINING or node.type == "template_declaration":
        for child in node.named_children:
            if child.type in _TYPE_DEFINING | {"type_identifier"} and child.type != "template_parameter_list":
                name = child.child_by_field_name("name") if child.type in _TYPE_DEFINING else child
                if name is not None:
                    names.append(name.text.decode().split("<")[0].strip())  # a specialisation names its template
                    break
        if node.type == "template_declaration":
            for child in node.named_children:
                if child.type in ("declaration", "alias_declaration"):
                    names.extend(_declared_names(child))
                elif child.type == "concept_definition" and (name := child.child_by_field_name("name")) is not None:
                    names.append(name.text.decode())  # C++20: ``template <class T> concept Floaty = ...;``
        return tuple(names)
    if node.type == "namespace_alias_definition":
        return (node.named_children[0].text.decode(),)
    if node.type == "alias_declaration":
        name = node.child_by_field_name("name")
        return (name.text.decode(),) if name is not None else ()
    for child in node.named_children:
        if child.type in _TYPE_DEFINING:
            name = child.child_by_field_name("name")
            if name is not None and child.child_by_field_name("body") is not None:
                names.append(name.text.decode())
    for declarator in node.children_by_field_name("declarator"):
        name = declarator_name(declarator)
        if name is not None:
            names.append(name.text.decode())
    return tuple(names)


def _constexpr(function: Function) -> bool:
    """A ``constexpr`` host function: device code's constant expressions may call it
    (``constexpr int kItems = ceil_div(10, 4);``), so it travels with what names it."""
    head = function.text.split("(", 1)[0]
    return re.search(r"\b(constexpr|consteval)\b", head) is not None


def _function_kind(definition: ts.Node) -> FunctionKind:
    tokens = {c.type for c in definition.children if not c.is_named}
    tokens |= {c.text.decode() for c in definition.named_children if c.type in ("type_qualifier", "storage_class_specifier")}
    if "__global__" in tokens:
        return "global"
    if "__device__" in tokens:
        return "device"
    return "host"


def _function(
    outer: ts.Node, definition: ts.Node, data: bytes, where: Origin, scope: Scope, extern_c: bool = False,
    owner: str | None = None,
) -> Function:
    path, line = where(line_of(outer))
    declarator = inner_declarator(definition.child_by_field_name("declarator"), ("function_declarator", "operator_cast"))
    if declarator is None:
        raise HFuseError("cannot find the function's declarator", Location(path, line))
    if declarator.type == "operator_cast":  # ``operator T *() const``: a conversion, no parameters
        name = re.sub(r"\s+", " ", _text(declarator, data).split("(")[0]).strip()
        params: tuple[Param, ...] = ()
    else:
        named = declarator.child_by_field_name("declarator")
        if named.type == "template_function" and _function_kind(definition) != "global":
            # an explicit specialisation (``cast<half2, float>``) is one more definition of
            # its template: it shares the template's key, so it travels wherever the template does
            named = named.child_by_field_name("name")
        name = _text(named, data)
        params = tuple(_param(p, data) for p in declarator.child_by_field_name("parameters").named_children
                       if p.type != "comment")
    template_header, template_params, template_defaults, template_pack = "", (), (), None
    enclosing, whole = "", outer
    while outer.type == "template_declaration" and definition.parent is not None \
            and definition.parent.type == "template_declaration" and definition.parent != outer:
        # the outer headers of a nested one (``template <> template <class T>``): the function's
        # own parameters are the innermost's
        enclosing += "template " + _text(outer.child_by_field_name("parameters"), data) + " "
        outer = next(c for c in outer.named_children if c.type == "template_declaration")
    if outer.type == "template_declaration":
        plist = outer.child_by_field_name("parameters")
        template_header = enclosing + "template " + _text(plist, data)
        requires = next((c for c in outer.named_children if c.type == "requires_clause"), None)
        if requires is not None:  # the constraint is part of which template this is
            template_header += " " + _text(requires, data)
        declared = [p for p in plist.named_children if p.type != "comment"]
        template_params = tuple(template_param_name(p) for p in declared)
        template_defaults = tuple(
            _text(d, data) if (d := _template_param_default(p))
            else None for p in declared)
        if declared and declared[-1].type in ("variadic_type_parameter_declaration", "variadic_parameter_declaration"):
            template_pack = template_params[-1] or None
    bounds = None
    for child in definition.named_children:
        if child.type == "launch_bounds":  # the arguments as written (constant expressions)
            bounds = tuple(_text(n, data) for n in child.named_children if n.type != "comment")
    body = definition.child_by_field_name("body")
    head = data[whole.start_byte : body.start_byte if body is not None else whole.end_byte].decode()
    return Function(
        name=name,
        kind=_function_kind(definition),
        file=path,
        line=line,
        text=_text(whole, data),
        params=params,
        template_header=template_header,
        template_params=template_params,
        template_defaults=template_defaults,
        template_pack=template_pack,
        launch_bounds=bounds,
        cluster_dims=kernel_attribute("__cluster_dims__", head),
        max_registers=kernel_attribute("__maxnreg__", head),
        extern_c=extern_c,
        scope=scope,
        owner=owner,
    )


def template_param_name(node: ts.Node) -> str:
    """The name a template parameter declares (``T`` of ``typename T = float``, ``Policy``
    of ``template <int> class Policy = Unrolled``); empty for an unnamed one
    (``typename = std::enable_if_t<...>``, ``std::enable_if_t<C, int> = 0``)."""
    if node.type == "template_template_parameter_declaration":
        inner = [c for c in node.named_children if c.type != "template_parameter_list"]
        return template_param_name(inner[0]) if inner else ""
    declared = node.child_by_field_name("declarator") or node.child_by_field_name("name")
    if declared is None and node.type in ("type_parameter_declaration", "variadic_type_parameter_declaration"):
        idents = [c for c in node.named_children if c.type == "type_identifier"]
        declared = idents[-1] if idents else None
    if declared is not None and declared.type not in ("type_identifier", "identifier"):
        declared = declarator_name(declared)
    return declared.text.decode() if declared is not None else ""


def _template_param_default(node: ts.Node) -> ts.Node | None:
    """The default argument of a template parameter as written, or None."""
    if node.type == "template_template_parameter_declaration":
        inner = [c for c in node.named_children if c.type != "template_parameter_list"]
        return _template_param_default(inner[0]) if inner else None
    return node.child_by_field_name("default_type") or node.child_by_field_name("default_value")


def _param(node: ts.Node, data: bytes) -> Param:
    text = _text(node, data)
    declarator = node.child_by_field_name("declarator")
    name = declarator_name(declarator) if declarator is not None else None
    if name is None:
        return Param(text=text, name=None)
    return Param(text=text, name=_text(name, data), name_start=name.start_byte - node.start_byte)
