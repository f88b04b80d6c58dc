"""Build the model of one file from its tree-sitter tree."""
from __future__ import annotations

import re
from pathlib import Path

import tree_sitter as ts

from ..errors import HFuseError, Location
from .model import Function, FunctionKind, Param, SourceFile, TopLevelItem
from .parse import line_of, parse
from .preprocess import preprocess

_TYPE_DEFINING = {"struct_specifier", "class_specifier", "union_specifier", "enum_specifier"}


def load_source(path: str | Path, text: str | None = None) -> SourceFile:
    """Read (unless ``text`` is given), expand macros, parse and model one file."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text()
        except OSError as exc:
            raise HFuseError(f"cannot read the source file: {exc.strerror}", Location(path)) from exc
    expanded = preprocess(text, path)
    return model_source(path, expanded)


def model_source(path: Path, text: str) -> SourceFile:
    data = text.encode()
    tree = parse(data)
    source = SourceFile(path=path, text=text)
    for node in tree.root_node.children:
        source.items.extend(_items(node, data, path))
    return source


def _text(node: ts.Node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode()


def _items(node: ts.Node, data: bytes, path: Path) -> list[TopLevelItem]:
    text = _text(node, data)
    line = line_of(node)
    if node.type == "comment":
        return []
    if node.type == "preproc_include":
        return [TopLevelItem("include", text.strip(), (), path, line)]
    if node.type == "linkage_specification":
        body = node.child_by_field_name("body")
        if body is not None and body.type == "function_definition":
            fn = _function(node, body, data, path, extern_c=True)
            return [TopLevelItem("function", text, (fn.name,), path, line, fn)]
        if body is not None and body.type == "declaration_list":
            return [i for child in body.named_children for i in _items(child, data, path)]
    definition = node
    if node.type == "template_declaration":
        inner = [c for c in node.named_children if c.type != "template_parameter_list"]
        if inner and inner[0].type == "function_definition":
            definition = inner[0]
    if definition.type == "function_definition":
        fn = _function(node, definition, data, path)
        return [TopLevelItem("function", text, (fn.name,), path, line, fn)]
    if node.type in ("declaration", "type_definition", "alias_declaration", "namespace_alias_definition") or (
        node.type in _TYPE_DEFINING
    ) or node.type == "template_declaration":
        return [TopLevelItem("declaration", text, _declared_names(node), path, line)]
    return [TopLevelItem("other", text, (), path, line)]


def _declared_names(node: ts.Node) -> tuple[str, ...]:
    names: list[str] = []
    if node.type in _TYPE_DEFINING or node.type == "template_declaration":
        for child in node.named_children:
            if child.type in _TYPE_DEFINING | {"type_identifier"} and child.type != "template_parameter_list":
                name = child.child_by_field_name("name") if child.type in _TYPE_DEFINING else child
                if name is not None:
                    names.append(name.text.decode())
                    break
        if node.type == "template_declaration":
            for child in node.named_children:
                if child.type in ("declaration", "alias_declaration"):
                    names.extend(_declared_names(child))
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


def declarator_name(node: ts.Node) -> ts.Node | None:
    """The identifier a (possibly nested) declarator declares."""
    current: ts.Node | None = node
    while current is not None:
        if current.type in ("identifier", "field_identifier", "type_identifier", "qualified_identifier", "operator_name"):
            return current
        if current.type == "parameter_pack_expansion":
            current = current.named_children[0] if current.named_children else None
            continue
        inner = current.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in current.named_children if c.type not in ("type_qualifier", "attribute_specifier")]
            inner = named[0] if named else None
        current = inner
    return None


def _function_kind(definition: ts.Node) -> FunctionKind:
    tokens = {c.type for c in definition.children if not c.is_named}
    tokens |= {c.text.decode() for c in definition.named_children if c.type in ("type_qualifier", "storage_class_specifier")}
    if "__global__" in tokens:
        return "global"
    if "__device__" in tokens:
        return "device"
    return "host"


def _function(outer: ts.Node, definition: ts.Node, data: bytes, path: Path, extern_c: bool = False) -> Function:
    declarator = definition.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        raise HFuseError("cannot find the function's declarator", Location(path, line_of(definition)))
    name_node = declarator.child_by_field_name("declarator")
    name = _text(name_node, data)
    params = tuple(_param(p, data) for p in declarator.child_by_field_name("parameters").named_children if p.type != "comment")
    template_header, template_params = "", ()
    if outer.type == "template_declaration":
        plist = outer.child_by_field_name("parameters")
        template_header = "template " + _text(plist, data)
        template_params = tuple(_template_param_name(p) for p in plist.named_children)
    bounds = None
    for child in definition.named_children:
        if child.type == "launch_bounds":
            bounds = tuple(int(re.sub(r"[uUlL]+$", "", n.text.decode()), 0) for n in child.named_children if n.type == "number_literal")
    return Function(
        name=name,
        kind=_function_kind(definition),
        file=path,
        line=line_of(outer),
        text=_text(outer, data),
        params=params,
        template_header=template_header,
        template_params=template_params,
        launch_bounds=bounds,
        extern_c=extern_c,
    )


def _template_param_name(node: ts.Node) -> str:
    """The name a template parameter declares (``T`` of ``typename T = float``)."""
    declared = node.child_by_field_name("declarator") or node.child_by_field_name("name")
    if declared is None:
        idents = [c for c in node.named_children if c.type in ("type_identifier", "identifier")]
        declared = idents[-1] if idents else None
    if declared is not None and declared.type not in ("type_identifier", "identifier"):
        declared = declarator_name(declared)
    return declared.text.decode() if declared is not None else ""


def _param(node: ts.Node, data: bytes) -> Param:
    text = _text(node, data)
    declarator = node.child_by_field_name("declarator")
    name = declarator_name(declarator) if declarator is not None else None
    if name is None:
        return Param(text=text, name=None)
    return Param(text=text, name=_text(name, data), name_start=name.start_byte - node.start_byte)
