"""tree-sitter parsing of CUDA text, with the few constructs the grammar lacks masked."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import tree_sitter as ts
import tree_sitter_cuda

from ..errors import Location
from ..files import read_text_file

# Constructs tree-sitter-cuda does not know are masked (same length, so every byte
# offset stays valid) in the text the parser sees. A node's ``.text`` is that masked
# text: whatever is written out must be sliced from the real bytes (``source_text``).
# ``__align__(N)`` (also ``__align__(sizeof(T))``), ``__cluster_dims__(X, Y, Z)`` and
# ``__maxnreg__(N)`` are blanked (the kernel model reads the last two from the text:
# ``kernel_attribute``), and so is ``__launch_bounds__``'s third argument (blocks per cluster).
# ``#pragma`` lines: the grammar takes a directive for a statement, so ``for (...)``
# followed by ``#pragma unroll`` loses its body. They become same-length comments, so
# they stay in the tree as nodes between statements (rewrites that move statements keep
# them with the statement that follows) while the code around them parses as written.
# A pointer parameter pack (``const Ins* __restrict__... ins``): the grammar reads ``&...``
# and ``&&...`` but not ``*...``, so the parser sees ``&`` there (qualifiers blanked).
_BALANCED = rb"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
"""Parentheses holding up to two more levels of them."""
_ALIGN = re.compile(rb"\b(?:__align__|__cluster_dims__|__maxnreg__)\s*" + _BALANCED)
_LAUNCH_BOUNDS = re.compile(rb"\b__launch_bounds__\s*" + _BALANCED)
_POINTER_PACK = re.compile(rb"(?<=[\w>])(\s*)\*((?:\s*(?:__restrict__|__restrict|const|volatile)\b)*\s*)\.\.\.")
"""After a type (``Ins*...``, ``T<U>* const...``): never the ``*`` of a comment's ``/* ...``."""
_PRAGMA = re.compile(rb"^([ \t]*)(#[ \t]*pragma\b[^\n]*)", re.M)
_SPACE_BEFORE_FRIEND = re.compile(rb"\b((?:(?:__device__|__host__|__forceinline__|inline)\s+)+)friend\b")
"""``__device__ friend V operator+(V a, V b)``: the grammar takes a function's attributes after
``friend`` only (``friend __device__ V ...``), so they change places, the text's length kept."""


def _friend_first(match: re.Match) -> bytes:
    words = b" ".join(match.group(1).split())
    newlines = match.group(0).count(b"\n")  # (kept: every later node keeps its line)
    return (b"friend " + words).ljust(len(match.group(0)) - newlines) + b"\n" * newlines


_DECLTYPE_BRACED = re.compile(rb"\bdecltype\s*" + _BALANCED + rb"(?=\s*\{)")
"""``decltype(n){0}``, a braced cast to the type of ``n``, which the grammar does not know:
parsed as a name (what it names is unevaluated, so nothing in it is rewritten)."""
_TYPENAME_CAST = re.compile(rb"\btypename(?=\s+(?:::)?\w+(?:\s*<[^;{}()]*?>)?(?:\s*::\s*\w+(?:\s*<[^;{}()]*?>)?)+\s*[({])")
"""``typename Ktraits::BlockLoadT(smem).Load(...)``: a functional cast to a dependent type (CUB
through a traits struct, as Mamba's scans write it), which the grammar does not parse. The
parser sees the cast without ``typename``, a call of the qualified name."""
_CONVERSION_CALL = re.compile(rb"(?<=\.|>)(\s*)(operator\s+(?:const\s+)?[A-Za-z_][\w:]*(?:\s*[*&])*)(?=\s*\()")
"""``x.operator __half()``: a conversion function called by name (mmcv's warp reductions of
PyTorch's Half), which the grammar does not parse: the parser sees a member of one name."""
_EMPTY_BODY_SEMICOLON = re.compile(rb"(\b\w+\s*\([^()]*\)\s*(?:const\s*)?\{\s*\}\s*);")
"""``__global__ void MarlinDefault(int* p){};``: a function whose empty body a ``;`` follows,
which the grammar reads as a variable initialised with ``{}``: the parser sees no ``;``."""
_LITERALS = re.compile(rb'//[^\n]*|/\*.*?\*/|\'(?:[^\'\\\n]|\\.)*\'|"(?:[^"\\\n]|\\.)*"', re.S)
_MACRO_AFTER_STRING = re.compile(rb'(\s+)([A-Z_][A-Z0-9_]*(?:\s*\((?:[^()"]|"(?:[^"\\]|\\.)*")*\))?)(?=\s*")')


def _macros_between_strings(source: bytes) -> bytes:
    """``"line " C10_STRINGIZE(156) ": "``: a macro (kept as written: a system header's) between
    string literals, as PyTorch's ``TORCH_CHECK`` expands in host code. The grammar does not read
    it, and its error hid every kernel after the host function: the parser sees one more string."""
    if b'"' not in source:
        return source
    out, at = bytearray(source), 0
    for literal in _LITERALS.finditer(source):
        if literal.start() < at or not literal.group().startswith(b'"'):
            continue
        found = _MACRO_AFTER_STRING.match(source, literal.end())
        if found is not None and len(found.group(2)) >= 2:
            out[found.start(2):found.end(2)] = b'"' + b"_" * (len(found.group(2)) - 2) + b'"'
            at = found.end(2)
    return bytes(out)


# A lambda's execution space (``[] __device__(float v) {...}``): the grammar knows none there.
_LAMBDA_SPACE = re.compile(rb"(?<=\])(\s*)((?:__device__|__host__)(?:\s+(?:__device__|__host__))?)(?=\s*[(\{])")


def _as_comment(match: re.Match) -> bytes:
    indent, pragma = match.group(1), match.group(2).rstrip(b"\r")
    tail = match.group(2)[len(pragma):]
    inner = pragma[2:-2] if len(pragma) >= 4 else b""
    return indent + (b"/*" + inner.replace(b"*/", b"**") + b"*/" if len(pragma) >= 4 else b" " * len(pragma)) + tail


@lru_cache(maxsize=1)
def _language() -> ts.Language:
    return ts.Language(tree_sitter_cuda.language())


def kernel_attribute(name: str, head: str) -> str | None:
    """The arguments of attribute ``name`` (``__cluster_dims__``, ``__maxnreg__``) in a
    function's text before its body, as written (``"2, 1, 1"``), or None."""
    found = re.search(rf"\b{name}\s*" + _BALANCED.decode(), head)
    return found.group(0)[found.group(0).index("(") + 1 : -1].strip() if found else None


def _top_level_commas(text: bytes) -> list[int]:
    """Offsets of the commas of ``text`` outside any parentheses, brackets or braces."""
    depth, commas = 0, []
    for i, c in enumerate(text):
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif c == ord(",") and depth == 0:
            commas.append(i)
    return commas


def _two_launch_bounds(match: re.Match) -> bytes:
    """``__launch_bounds__(256, 2, 4)``: the grammar takes two arguments, so the third is blanked."""
    text = match.group(0)
    open_at = text.index(b"(")
    commas = _top_level_commas(text[open_at + 1 : -1])
    if len(commas) < 2:
        return text
    start, end = open_at + 1 + commas[1], len(text) - 1
    return text[:start] + b" " * (end - start) + text[end:]


def mask(source: bytes) -> bytes:
    """The text the parser sees: same length as ``source``, unknown constructs masked."""
    masked = _ALIGN.sub(lambda m: b" " * len(m.group(0)), source)
    masked = _LAUNCH_BOUNDS.sub(_two_launch_bounds, masked)
    masked = _LAMBDA_SPACE.sub(lambda m: m.group(1) + b" " * len(m.group(2)), masked)
    masked = _POINTER_PACK.sub(lambda m: m.group(1) + b"&" + b" " * len(m.group(2)) + b"...", masked)
    masked = _SPACE_BEFORE_FRIEND.sub(_friend_first, masked)
    masked = _DECLTYPE_BRACED.sub(lambda m: b"_" * len(m.group(0)), masked)
    masked = _TYPENAME_CAST.sub(lambda m: b" " * len(m.group(0)), masked)
    masked = _macros_between_strings(masked)
    masked = _EMPTY_BODY_SEMICOLON.sub(lambda m: m.group(1) + b" ", masked)
    masked = _CONVERSION_CALL.sub(lambda m: m.group(1) + b"operator" + b"_" * (len(m.group(2)) - 8), masked)
    return _PRAGMA.sub(_as_comment, masked)


def parse(source: bytes) -> ts.Tree:
    return ts.Parser(_language()).parse(mask(source))


def non_ascii_outside_comments(text: str) -> int | None:
    """For a file read as Latin-1 (it is not UTF-8: ``files.read_text_file``), the offset of
    its first character past ASCII outside a comment, or None. Such characters in comments
    change nothing (the fused file writes them as UTF-8); in a string literal, a ``#pragma``
    or an identifier they would change what the program prints or does, so the file is
    refused there."""
    if text.isascii():
        return None
    data = bytearray(text.encode("latin-1"))  # the file's own bytes: a character per byte
    for node in walk(ts.Parser(_language()).parse(bytes(data)).root_node):
        if node.type == "comment":
            data[node.start_byte:node.end_byte] = b" " * (node.end_byte - node.start_byte)
    return next((offset for offset, byte in enumerate(data) if byte >= 0x80), None)


def read_source_file(path: str | Path, what: str = "source file", where: Location | None = None) -> str:
    """A CUDA file's text: UTF-8, or Latin-1 where its other bytes all sit in comments."""
    return read_text_file(path, what, where, legacy=non_ascii_outside_comments)


def source_text(node: ts.Node, source: bytes) -> str:
    """The user's text of ``node`` (``node.text`` is the masked text the parser saw)."""
    return source[node.start_byte : node.end_byte].decode()


def is_pragma(node: ts.Node, source: bytes) -> bool:
    """A ``#pragma`` line (it parses as a comment, see ``mask``)."""
    return node.type == "comment" and source[node.start_byte : node.end_byte].lstrip().startswith(b"#")


def compact(text: str) -> str:
    """``text`` without any whitespace: a name as written, however it was spread over lines
    (``ns::\n    f``, ``a :: b``)."""
    return "".join(text.split())


def split_template_args(text: str) -> tuple[str, ...]:
    """``float, Vec<int, 2>`` -> ("float", "Vec<int, 2>"): commas at nesting depth 0 only."""
    args, depth, current = [], 0, ""
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        args.append(current.strip())
    return tuple(args)


def first_error(node: ts.Node) -> ts.Node | None:
    """The first ERROR or MISSING node below ``node`` (document order), if any."""
    if not node.has_error:
        return None
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        found = first_error(child)
        if found is not None:
            return found
    return node


def walk(node: ts.Node):
    """Every node below ``node`` (including it), document order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def line_of(node: ts.Node) -> int:
    return node.start_point[0] + 1


def inner_declarator(node: ts.Node | None, stop: tuple[str, ...] = ("function_declarator",)) -> ts.Node | None:
    """The declarator of type ``stop`` inside ``node``, through pointer and reference
    declarators (``float& at(...)``, ``T* const* f(...)``: a reference declarator has no
    ``declarator`` field, its declarator is a plain child). None when there is none."""
    while node is not None and node.type not in stop:
        inner = node.child_by_field_name("declarator")
        if inner is None and node.type in ("reference_declarator", "pointer_declarator"):
            inner = next((c for c in node.named_children if c.type.endswith("declarator") or c.type in stop), None)
        node = inner
    return node


def declarator_name(node: ts.Node) -> ts.Node | None:
    """The identifier a (possibly nested) declarator declares; None for an abstract one
    (``float[4]``, and ``v(x[threadIdx.x])`` read as a function declaration: the grammar's
    most vexing parse of ``T v(x[threadIdx.x]);``), whose expressions declare nothing."""
    current: ts.Node | None = node
    while current is not None:
        if current.type in ("identifier", "field_identifier", "type_identifier", "qualified_identifier", "operator_name"):
            return current
        if current.type == "parameter_pack_expansion":
            current = current.named_children[0] if current.named_children else None
            continue
        if current.type.startswith("abstract_") or not current.type.endswith("declarator"):
            return None
        inner = current.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in current.named_children if c.type not in ("type_qualifier", "attribute_specifier")]
            inner = named[0] if named else None
        current = inner
    return None


_DECLARING = ("declaration", "parameter_declaration", "optional_parameter_declaration", "init_declarator",
              "array_declarator", "pointer_declarator", "reference_declarator")


def declared_names(root: ts.Node) -> set[str]:
    """Names the declarations in ``root`` declare (not their initializers' names)."""
    return {name.text.decode() for node in walk(root) if node.type in _DECLARING
            and (declarator := node.child_by_field_name("declarator")) is not None
            and (name := declarator_name(declarator)) is not None and name.type == "identifier"}


def hidden_by_local(node: ts.Node) -> bool:
    """Whether a parameter (of the function or of a lambda around ``node``) or a local
    declared before ``node``, in a scope around it, has its name: it hides a file-scope
    variable or function of that name there (``auto lane = [](int x) {...}; lane(3)``)."""
    return local_declaration(node) is not None


def local_declaration(node: ts.Node) -> ts.Node | None:
    """The declaration of the parameter or local that ``node``'s name finds (``hidden_by_local``),
    or None."""
    name, current = node.text.decode(), node
    while current.parent is not None:
        parent = current.parent
        for child in parent.children:
            if child.start_byte >= node.start_byte:
                break
            if child.type in (*_DECLARING, "parameter_list", "abstract_function_declarator") \
                    and (found := _declaring(child, name)) is not None:
                return found
        if parent.type == "function_definition":
            declarator = parent.child_by_field_name("declarator")
            if declarator is not None and (found := _declaring(declarator, name)) is not None:
                return found
        current = parent
    return None


def _declaring(root: ts.Node, name: str) -> ts.Node | None:
    return next((node for node in walk(root) if node.type in _DECLARING
                 and (declarator := node.child_by_field_name("declarator")) is not None
                 and (found := declarator_name(declarator)) is not None and found.type == "identifier"
                 and found.text == name.encode()), None)


def declares_function_pointer(declaration: ts.Node, declarator: ts.Node | None = None) -> bool:
    """Whether ``declaration`` declares its (first, or ``declarator``'s) name a pointer or
    reference to a function by its declarator: ``float (*op)(float)``, ``float (&op)(float)``,
    ``float (*ops[4])(float)``. (A function-pointer type by name, ``unary_op op``, is the
    resolver's to tell.)"""
    declarator = declarator or declaration.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "identifier":
        if declarator.type == "function_declarator":
            inner = declarator.child_by_field_name("declarator")
            return inner is not None and inner.type == "parenthesized_declarator"
        declarator = declarator.child_by_field_name("declarator") or next(
            (c for c in declarator.named_children if c.type.endswith("declarator") or c.type == "identifier"), None)
    return False


def in_default_argument(node: ts.Node) -> bool:
    """Whether ``node`` is inside a parameter's default argument (``int t = threadIdx.x``)."""
    current = node.parent
    while current is not None and current.type not in ("compound_statement", "function_definition"):
        if current.type in ("optional_parameter_declaration", "optional_type_parameter_declaration"):
            return True
        current = current.parent
    return False


def names_a_value(node: ts.Node) -> bool:
    """Whether ``node`` is a name used as a value where a function may be one: an argument
    (``g(f)``, ``apply<f>``), an address (``&f``), an initializer or the right of ``=``, a
    branch of ``?:`` (``c ? f : g``), a returned value, a cast's operand."""
    parent = node.parent
    if parent is None or node.type not in ("identifier", "qualified_identifier", "type_identifier", "template_function"):
        return False  # (a template_function: an instance's address, ``g = apply<int>``)
    if node.type == "type_identifier":
        return (parent.type == "type_descriptor" and parent.text == node.text and parent.parent is not None
                and parent.parent.type == "template_argument_list")
    return _value_position(node)


def _value_position(node: ts.Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if parent.type in ("argument_list", "template_argument_list", "initializer_list", "return_statement",
                       "comma_expression"):
        return True
    if parent.type == "parenthesized_expression":  # '(f)(x)' calls f; '(f)' elsewhere is its address
        return _value_position(parent)
    if parent.type == "pointer_expression":
        return parent.child_by_field_name("operator") is not None and parent.child_by_field_name("operator").type == "&"
    if parent.type in ("init_declarator", "assignment_expression"):
        return parent.child_by_field_name("value" if parent.type == "init_declarator" else "right") == node
    if parent.type == "conditional_expression":
        return parent.child_by_field_name("condition") != node
    if parent.type == "cast_expression":
        return parent.child_by_field_name("value") == node
    return False
    if node.type == "type_identifier":
        return (parent.type == "type_descriptor" and parent.text == node.text and parent.parent is not None
                and parent.parent.type == "template_argument_list")
    if parent.type in ("argument_list", "template_argument_list", "initializer_list"):
        return True
    if parent.type == "pointer_expression":
        return parent.child_by_field_name("operator") is not None and parent.child_by_field_name("operator").type == "&"
    if parent.type in ("init_declarator", "assignment_expression"):
        return parent.child_by_field_name("value" if parent.type == "init_declarator" else "right") == node
    return False
