"""ContextTypeRewrite: structs whose member functions read the block get a per-part copy.

The classic case is the ``SharedMemory<T>`` wrapper of the CUDA samples::

    template <class T> struct SharedMemory {
      __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
    };
    ...  T *sdata = SharedMemory<T>();

A member function cannot take the part's context as a parameter (conversion operators
take none, and calls to it are implicit), so the *object* carries it: part ``i`` gets
``SharedMemory__hf<i>`` with a ``const hfuse_ctx& hf_ctx`` member set by its only
constructor, and every object of the type in that part's code is constructed with the
part's context. Member bodies are rewritten like any other part code, so they see the
part's own slice of dynamic shared memory, thread index and barrier.

A static member function that reads the block has no object: each part's copy declares
it with the part's context as its first parameter, and every call passes it
(``Warp__hf2::lane(hf_ctx)``), as a helper's copy takes it.

Supported: default construction (``S<T> s;``, ``S<T>()``, ``S<T>{}``, ``S{}`` as a temporary,
``S<T> s = S<T>();``), pointers and references to the type, static members, a base that
names the type (CRTP's ``Base<S>``), and constructors of the user's written in the class:
each takes the part's context first (a copy constructor copies its source's), and every
object made with arguments is given it (``S op(hf_ctx, s)``). An aggregate initialised with
values (``WarpTile t{smem}``) gets a constructor per number of values, which sets the members
as aggregate initialisation did; value-initialisation (``S s{}``) starts from zeros. Objects
the kernel's body makes of a template parameter the instance binds to such a type
(``Op op;`` of ``k<Square<float>>``) are made as the type's are, and its calls of the type's
static members through the parameter (``KT::run(p)``: xformers' traits structs) pass the
part's context as calls of the type's own do.

Refused with a clear error: constructors written outside the class or delegating to
another, designated initialisers, an aggregate with arrays, references or const members
initialised with values, objects no constructor of the copy made (memory cast to the type,
``__shared__`` variables of it, its ``sizeof``, a function template that measures or casts to
a type parameter the type may reach), arrays of the type, a name overloaded as a
static and a non-static member, a class nested in the type whose member reads the block
(the outer object's context does not reach it), and the type given as a template argument
to other code where a static member reads the block (``apply<S>(x)`` calls ``S::op(x)``
without the context the copy's ``op`` takes).
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.model import Function, Scope, TopLevelItem
from ..frontend.parse import compact, line_of, parse, walk
from ..frontend.resolve import LocalNames
from .calls import context_parameter
from .context import CTX, BoundParameter, PartContext
from .definition import Definition
from .edits import TextEdit, apply_edits
from .aliases import ALIASED, MEMBER_ALIAS, LocalAliases
from .class_members import (constructor_edits, data_members, is_copy_constructor, is_member_function, struct_body,
                            member_initialisers, user_constructors, value_constructors)

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _type_named(node: ts.Node, ctx: PartContext, scope: Scope, local: LocalNames,
                made: Mapping[str, str] | None = None) -> str | None:
    """The key of the context type ``node`` names (None: it names none); ``made``: the
    kernel's template parameters bound to one, in the kernel's own definition."""
    if node.type not in ("identifier", "type_identifier", "namespace_identifier"):  # (the last: ``Tile::swap``)
        return None
    text = node.text.decode()
    if made and text in made:
        return made[text]  # the kernel's template parameter this instance binds to one
    key = ctx.resolver.resolve(scope, _written_name(node), local) if text in ctx.context_type_names else None
    if key is None:
        # ``typename Ktraits::ScanT(smem)``: a traits struct's member alias of one (of a
        # template parameter: hfuse resolves no name in it)
        qualified = node.parent is not None and node.parent.type == "qualified_identifier" \
            and node.parent.child_by_field_name("name") == node
        return dict(ctx.context_type_aliases).get(text) if qualified else None
    return key if key in ctx.context_types else None


def _written_name(node: ts.Node) -> str:
    """The name ``node`` ends, with the qualifiers written before it and without its template
    arguments: ``qlib::Stats`` of ``qlib::Stats<kind>``, ``a::b::S`` of ``a::b::S``, ``TR::Reducer`` of
    ``TR::Reducer::Type`` (once ``Reducer`` alone: a traits struct's member alias of the same name as a
    type that reads the block was renamed to the type's copy)."""
    named = node.parent if node.parent is not None and node.parent.type == "template_type" \
        and node.parent.child_by_field_name("name") == node else node
    outer = named
    if outer.parent is not None and outer.parent.type == "qualified_identifier" \
            and outer.parent.child_by_field_name("scope") == outer:
        outer = outer.parent  # (the scope of a member: ``TR::Reducer`` of ``TR::Reducer::Type``)
    while outer.parent is not None and outer.parent.type == "qualified_identifier" \
            and outer.parent.child_by_field_name("name") == outer:
        outer = outer.parent
    return compact(outer.text[: named.start_byte - outer.start_byte].decode() + node.text.decode())


def _constructed_type(node: ts.Node) -> ts.Node | None:
    """The identifier a call-style construction names: ``S()``, ``S<T>()``, ``ns::S<T>()``."""
    fn = node.child_by_field_name("function")
    while fn is not None and fn.type in ("qualified_identifier", "template_function"):
        fn = fn.child_by_field_name("name")
    return fn if fn is not None and fn.type == "identifier" else None


def context_type_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    """Rename the part's context types to its copies and construct every object with the context."""
    if not ctx.context_types:
        return []
    root, scope, local = definition.root, definition.scope, definition.local
    file, line_base = str(definition.file), definition.line_base
    made = {bound.name: bound.key for bound in ctx.made_parameters} if (file, definition.line) == ctx.kernel_at else {}
    aliases = LocalAliases(root)
    edits: list[TextEdit] = []

    def named(node: ts.Node) -> str | None:  # (an alias's use: the type it names)
        if not aliases.shadowed(node):
            return _type_named(node, ctx, scope, local, made)
        target = aliases.target(node)
        return _type_named(target, ctx, scope, local, made) if target is not None else None

    def refuse(node: ts.Node, why: str) -> HFuseError:
        return HFuseError(why, Location(file, line_base + line_of(node), ctx.kernel),
                          hint="construct the object with no arguments (S<T> s; or S<T>()) or with values in order "
                               "(S s{p, 4}), or keep this kernel unfused")

    for node in walk(root):
        if made and (member := _static_reader_bound(node, ctx, made)) is not None:
            text = node.text.decode()
            raise HFuseError(
                f"template parameter '{text}' is bound to a type whose static member '{member}' reads the block, and "
                f"the kernel uses '{text}' other than to call its members ({text}::{member}(...)) or to name its "
                "member types: each part's copy of the type takes the part's view of the block as a parameter of "
                f"'{member}', which a call through another template, an alias or an object is not given",
                Location(file, line_base + line_of(node), ctx.kernel),
                hint=f"call the member as {text}::{member}(...) in the kernel itself, or keep this kernel unfused")
        if named(node) is not None:
            if (member := _static_reader_given(node, ctx, scope, local)) is not None:
                raise HFuseError(
                    f"'{node.text.decode()}' is given as a template argument, and its static member '{member}' reads "
                    "the block: the template calls it without the part's view of the block, which each part's copy "
                    "of the type takes as a parameter", Location(file, line_base + line_of(node), ctx.kernel),
                    hint="make the member non-static and pass an object, or keep this kernel unfused")
            if (why := _unconstructed(node)) is not None:
                raise HFuseError(
                    f"'{node.text.decode()}' has a member function that reads the block, and {why}: each part's copy "
                    "of such a type carries the part's view of the block in a member, set where an object is "
                    "constructed, so an object never constructed (memory cast to the type, a __shared__ variable) "
                    "has none, and the copy is larger than the type",
                    Location(file, line_base + line_of(node), ctx.kernel),
                    hint="read threadIdx/blockIdx in a free helper that takes the object (or in the kernel), or keep "
                         "this kernel unfused")
            if node.text.decode() in ctx.context_type_names and node.text.decode() not in made \
                    and not aliases.shadowed(node) \
                    and ctx.resolver.resolve(scope, _written_name(node), local) in ctx.context_types:
                # (a template parameter keeps its name, and so does an alias: the struct's copy names the copy)
                edits.append(TextEdit.replace(node, ctx.clone_name(node.text.decode())))
        elif node.type == "compound_literal_expression":  # S{} and S<T>{}: a temporary of the type
            written = node.child_by_field_name("type")
            value = node.child_by_field_name("value")
            while written is not None and written.type in ("qualified_identifier", "template_type"):
                written = written.child_by_field_name("name")
            key = named(written) if written is not None and value is not None else None
            if key is None:
                continue
            if value.named_children and (key not in ctx.constructed_types or _designated(value)):
                raise refuse(node, f"a '{written.text.decode()}' is initialised with values; hfuse's per-part copy of "
                             "the type takes only the part's context and values in order")
            edits.append(_with_context(value))
        elif node.type == "call_expression":
            constructed = _constructed_type(node)
            key = named(constructed) if constructed is not None else None
            if key is None:
                continue
            args = node.child_by_field_name("arguments")
            if args.named_children and key not in ctx.constructed_types:
                raise refuse(node, f"'{constructed.text.decode()}' is constructed with arguments and declares no constructor "
                             "that takes them; hfuse gives each part's copy of this type only a context-taking one")
            edits.append(_with_context(args))
        elif node.type in ("declaration", "field_declaration"):
            type_node = node.child_by_field_name("type")
            keys = {named(n) for n in walk(type_node) if not _is_scope(n)} - {None} \
                if type_node is not None else set()
            if not keys:
                continue
            in_body = node.type == "declaration" and _in_body(node)
            for declarator in node.children_by_field_name("declarator"):
                edits.extend(_declarator_edits(declarator, refuse, bool(keys & ctx.constructed_types), in_body))
    return edits


def _is_scope(node: ts.Node) -> bool:
    """``node`` names the scope of a qualified name (``S`` of ``S::Storage``)."""
    return node.parent is not None and node.parent.type in ("qualified_identifier", "qualified_type") \
        and node.parent.child_by_field_name("scope") == node


_CASTS = frozenset({"reinterpret_cast", "static_cast", "const_cast", "bit_cast"})
_STORAGE = frozenset({b"__shared__", b"__device__", b"__constant__", b"__managed__"})


def _unconstructed(node: ts.Node) -> str | None:
    """Why the use of a type that ``node`` names gives or measures an object that no
    constructor of the part's copy made (None: it does not)."""
    if _is_scope(node):
        return None  # a member of the type (``S::TempStorage``), not the type
    current = node
    while current.parent is not None and current.parent.type in (
            "type_descriptor", "qualified_identifier", "template_type", "parenthesized_expression"):
        current = current.parent
    parent = current.parent
    if parent is None:
        return None
    if parent.type in ("sizeof_expression", "alignof_expression"):
        return "its size or alignment is taken"
    if parent.type == "cast_expression" and current.type == "type_descriptor":
        return "a value is cast to it"
    if parent.type == "template_argument_list" and parent.parent is not None \
            and parent.parent.type == "template_function" and (named := parent.parent.child_by_field_name("name")) \
            is not None and named.text.decode().split("::")[-1] in _CASTS:
        return f"a value is {named.text.decode().split('::')[-1]} to it"
    if parent.type == "declaration" and any(c.type == "type_qualifier" and c.text in _STORAGE for c in parent.children):
        return "an object of it is a __shared__ or __device__ variable"
    return None


def _designated(values: ts.Node) -> bool:
    """``{.base = p, .ld = 2}``: C++20's designated initialisers name members, not positions."""
    return any(c.type == "initializer_pair" for c in values.named_children)


def _with_context(arguments: ts.Node) -> TextEdit:
    """The part's context as the first of ``arguments`` (``(...)`` or ``{...}``)."""
    if not arguments.named_children:
        return TextEdit(arguments.start_byte + 1, arguments.end_byte - 1, CTX)
    return TextEdit(arguments.start_byte + 1, arguments.start_byte + 1, f"{CTX}, ")


def _static_reader_given(node: ts.Node, ctx: PartContext, scope: Scope, local: LocalNames) -> str | None:
    """The static member reading the block of the type ``node`` names, where ``node`` is a
    template argument (``tlib::apply<LaneOp>(x)``); None otherwise."""
    parent = node.parent
    while parent is not None and parent.type in ("qualified_identifier", "type_descriptor", "template_type"):
        parent = parent.parent
    if parent is None or parent.type != "template_argument_list":
        return None
    written = compact(node.parent.text.decode()) if node.parent.type == "qualified_identifier" else node.text.decode()
    key = ctx.resolver.resolve(scope, written, local)
    return next((m.rsplit("::", 1)[-1] for m in sorted(ctx.static_members) if key and m.startswith(f"{key}::")), None)


def _static_reader_bound(node: ts.Node, ctx: PartContext, made: Mapping[str, str]) -> str | None:
    """The static member reading the block of the type a kernel's template parameter is bound
    to, where ``node`` uses that parameter in the kernel's body other than as the scope of a
    qualified name (``call_it<KT>(x)``, ``using K = KT;``, ``KT k;``); None otherwise."""
    if node.type not in ("identifier", "type_identifier") or (key := made.get(node.text.decode())) is None \
            or _is_scope(node) or not _in_body(node):
        return None
    return next((m.rsplit("::", 1)[-1] for m in sorted(ctx.static_members) if m.startswith(f"{key}::")), None)


def _in_body(node: ts.Node) -> bool:
    """``node`` is a statement of a function's body (not a member's or a file's declaration)."""
    current = node.parent
    while current is not None and current.type not in ("compound_statement", "field_declaration_list",
                                                        "translation_unit"):
        current = current.parent
    return current is not None and current.type == "compound_statement"


def _declarator_edits(declarator: ts.Node, refuse, constructed: bool, in_body: bool) -> list[TextEdit]:
    """``constructed``: the type declares constructors that take arguments; ``in_body``: the
    declaration is a statement of a function's body."""
    if declarator.type == "field_identifier":
        return []  # a member of another type: that type's constructors give it the view (``type_copy``)
    if declarator.type == "identifier":
        return [TextEdit(declarator.end_byte, declarator.end_byte, f"({CTX})")]
    if declarator.type == "function_declarator" and constructed and in_body:
        # ``S op(s);`` in a body reads as a function declaration to a parser that knows no types
        params = declarator.child_by_field_name("parameters")
        if params is not None and params.named_children:
            return [_with_context(params)]
    if declarator.type in ("pointer_declarator", "reference_declarator", "function_declarator"):
        return []
    if declarator.type == "init_declarator":
        value = declarator.child_by_field_name("value")
        if value is not None and value.type == "initializer_list":
            if value.named_children and (not constructed or _designated(value)):
                raise refuse(declarator, "an object of this type is initialised with values; hfuse's per-part "
                             "copy of the type takes only the part's context and values in order")
            return [_with_context(value)]
        if value is not None and value.type == "argument_list":
            if value.named_children and not constructed:
                raise refuse(declarator, "an object of this type is constructed with arguments, and the type "
                             "declares no constructor that takes them")
            return [_with_context(value)]
        return []  # '= S<T>()' is constructed by the call rewrite; '= other' copies
    raise refuse(declarator, "arrays of this type cannot be given the part's context")


def check_context_type(item: TopLevelItem, needs_context: set[str], kernel: str) -> None:
    """Refuse the shapes of a context type this rewrite does not handle."""
    plain = item.names[0].split("<")[0] if item.names else ""
    for member in user_constructors(item):
        why = ("is defined outside the class" if member.defined_outside else
               "delegates to another constructor" if re.search(
                   rf"\)\s*(?:noexcept\s*)?:\s*(?:[^{{]*,\s*)?{re.escape(plain.split('::')[-1])}\s*[<({{]",
                   member.text.split("{")[0]) else
               "copies an unnamed object" if is_copy_constructor(member, plain) and not member.params[0].name else None)
        if why is not None:
            raise HFuseError(
                f"'{plain}' has a member that reads the block or its dynamic shared memory, and its constructor "
                f"(line {member.line}) {why}: hfuse gives each constructor of a part's copy the part's context, "
                "written in the class", Location(member.file, member.line, kernel),
                hint="write the constructor in the class, initialising the members itself, or read threadIdx in a "
                     "free helper")
    for member in item.members:
        owner = member.key.rsplit("::", 1)[0].rsplit("::", 1)[-1]
        if member.key in needs_context and not member.hidden_friend and "::" in member.key \
                and owner != plain.split("::")[-1]:
            raise HFuseError(
                f"'{owner}::{member.name}' reads the block or its dynamic shared memory, and '{owner}' is a class "
                f"nested in '{plain}': each part's copy of '{plain}' carries the part's view of the block, which a "
                "nested class's objects do not reach", Location(member.file, member.line, kernel),
                hint=f"read threadIdx/blockIdx in a member of '{plain}' itself (or in the kernel) and pass the value "
                     f"to '{owner}', or keep this kernel unfused")
        if member.key in needs_context and member.hidden_friend:
            raise HFuseError(
                f"'{member.name}', a friend defined in '{plain}', reads the block or its dynamic shared memory; "
                "it is no member, so no object carries the part's context to it",
                Location(member.file, member.line, kernel),
                hint="make it a member function, or read threadIdx in the kernel and pass the value in",
            )
        overloads = [m for m in item.members if m.key == member.key]
        if member.key in needs_context and 0 < sum(map(_declared_static, overloads, [item] * len(overloads))) \
                < len(overloads):
            raise HFuseError(
                f"'{member.name}' of '{plain}' reads the block or its dynamic shared memory, and is overloaded as a "
                "static and a non-static member: hfuse gives the static ones the part's view of the block as a "
                "parameter and the others through their object, and cannot tell the calls apart",
                Location(member.file, member.line, kernel),
                hint="give the static and the non-static members different names, or keep this kernel unfused",
            )


def _declared_static(member: Function, item: TopLevelItem) -> bool:
    return "static" in member.text.split("(")[0].split() or bool(  # (outside, only its declaration says so)
        member.defined_outside and re.search(rf"\bstatic\b[^;{{}}]*\b{re.escape(member.name)}\s*\(", item.text))


def static_members_with_context(types: Sequence[TopLevelItem], needs_context: set[str]) -> frozenset[str]:
    """Keys of the types' static member functions that read the block (or call what does)."""
    return frozenset(m.key for item in types for m in item.members
                     if m.key in needs_context and _declared_static(m, item))


def static_member_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    """A static member function that reads the block, declared or defined here (in its
    class, or outside it as ``T W<T>::lane(...)``), takes the part's context first: it has no
    object to carry it, so it is given as a helper's copy is given it (``calls.py``)."""
    if not ctx.static_members:
        return []
    wanted = {tuple(key.split("::")[-2:]) for key in ctx.static_members}
    edits = []
    for node in walk(definition.root):
        if node.type != "function_declarator" or (named := node.child_by_field_name("declarator")) is None:
            continue
        if named.type == "qualified_identifier":
            owner, _, name = re.sub(r"<[^<>]*>", "", compact(named.text.decode())).rpartition("::")
            owner = owner.rpartition("::")[2]
        else:
            owner = _enclosing_class(node)
            name = named.text.decode()
        params = node.child_by_field_name("parameters")
        if owner is None or (owner, name) not in wanted or params is None:
            continue
        edits.append(context_parameter(params))
    return edits


def _enclosing_class(node: ts.Node) -> str | None:
    """The name of the class a member is declared in (None: not in a class's body)."""
    current = node.parent
    while current is not None and current.type != "compound_statement":  # (a body: no member)
        if current.type in ("struct_specifier", "class_specifier"):
            named = current.child_by_field_name("name")
            return re.sub(r"<.*", "", named.text.decode(), flags=re.S).strip() if named is not None else None
        current = current.parent
    return None


def host_made_types(kernel: Function, given: Sequence[str], types: Sequence[TopLevelItem], needs_context: set[str],
                    spec_name: str) -> frozenset[str]:
    """The context types of which the kernel takes an object the host made, by value (a
    functor ``U op`` with U = ``ScaleFunctor<half>``, a ``Table t``): each gets a twin of
    the host's layout for the fused kernel's parameter, converted to the part's copy where
    the part's body is called (``type_copy``). Keys of those types.

    Refused: a pointer or reference to such objects (a table of them in device memory has
    no context to give), and such a type inside another parameter's type, where no
    conversion can reach it."""
    if not types:
        return frozenset()
    arguments = kernel.complete_template_args(given) if given else ()
    bound = _bound(kernel, given)
    names = {item.names[0].split("<")[0].split("::")[-1]: item for item in types if item.names}
    found: set[str] = set()
    for param in kernel.params:
        head = param.declaration[: param.name_start] if param.name_start >= 0 else param.declaration
        whole = _IDENTIFIER.sub(lambda m: bound.get(m.group(0), m.group(0)), head)
        named = next((m.group() for m in _IDENTIFIER.finditer(whole) if m.group() in names
                      and not names_a_scope(whole, m.end())), None)
        if named is None:
            continue  # (``const typename Ktraits::input_t*``: a member type of it, no object of it)
        item = names[named]
        why = _not_by_value(whole, named, param.text) or _not_convertible(item)
        if why is None:
            found.update(item.keys)
            continue
        member = next((m for m in item.members if m.key in needs_context), None)
        reads = f" ({member.name}, line {member.line})" if member is not None else ""
        raise HFuseError(
            f"parameter '{param.name or param.text}' holds a '{named}' the host made, and '{named}' has a member "
            f"function that reads the block{reads}: {why}",
            Location(kernel.file, kernel.line, spec_name),
            hint="read threadIdx/blockIdx in the kernel and pass what the member needs as arguments, or keep this "
            "kernel unfused",
        )
    made = {bound.argument for bound in made_parameters(kernel, given, types)}
    for argument in arguments:
        for named in (n for n in _IDENTIFIER.findall(argument) if n in names and not set(names[n].keys) & found
                      and argument not in made):
            raise HFuseError(
                f"its template argument '{argument}' names '{named}', which has a member function that reads the "
                "block: each part has its own copy of such a type, and an object of it inside another type is not "
                "given the part's view of the block",
                Location(kernel.file, kernel.line, spec_name),
                hint=f"take the {named} object as a kernel parameter (by value), or keep this kernel unfused",
            )
    return frozenset(found)


def names_a_scope(text: str, end: int) -> bool:
    """Whether the name ending at ``end`` of ``text`` is the scope of a qualified name
    (``Traits<128, float>::input_t``): its template arguments, then ``::``."""
    depth, at = 0, end
    while at < len(text):
        if text[at] == "<":
            depth += 1
        elif text[at] == ">":
            if depth == 0:
                break  # (``Vec<Traits>``: the name ends an argument list)
            depth -= 1
        elif depth == 0 and not text[at].isspace():
            break
        at += 1
    return text.startswith("::", at)


def _bound(kernel: Function, given: Sequence[str]) -> dict[str, str]:
    """The kernel's template parameters and what this instance binds them to."""
    arguments = kernel.complete_template_args(given) if given else ()
    bound: dict[str, str] = {}
    for j, param in enumerate(kernel.template_params):
        if param == kernel.template_pack:
            bound[param] = ", ".join(arguments[j:])
        elif j < len(arguments):
            bound[param] = arguments[j]
    return bound


def made_parameters(kernel: Function, given: Sequence[str],
                    types: Sequence[TopLevelItem]) -> tuple[BoundParameter, ...]:
    """The kernel's template parameters that this instance binds to exactly a type that
    reads the block (``Op`` of ``-k 'run<Square<float>>'``), with the argument: objects of
    them the kernel's body makes (``Op op;``) are given the part's view of the block, as
    objects of the type named are, and the kernel's calls of its static members that read
    the block through the parameter (``KT::run(p)``, xformers' traits structs) pass it."""
    names = {item.names[0].split("<")[0].split("::")[-1]: item for item in types if item.names}
    made = []
    for param, argument in _bound(kernel, given).items():
        plain = re.fullmatch(r"\s*(?:::)?(?:\w+\s*::\s*)*(\w+)\s*(?:<.*>)?\s*", argument, re.S)
        item = names.get(plain.group(1)) if plain else None
        if item is not None and param != kernel.template_pack:
            made.append(BoundParameter(param, argument, item.keys[0]))
    return tuple(made)


_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__grid_constant__|struct|class|typename)\b")


def _not_by_value(whole: str, named: str, written: str) -> str | None:
    """Why a parameter of type ``whole`` does not hold a ``named`` by value (None: it does)."""
    if "..." in written:
        return "hfuse converts such an object only in a parameter of its own, not in a pack"
    plain = _QUALIFIERS.sub(" ", whole).strip()
    if any(c in plain for c in "*&["):
        return ("a part's copy of such a type carries the part's view of the block in a member the host's "
                "objects behind this pointer do not have")
    if not re.fullmatch(rf"(?:::)?(?:\w+\s*::\s*)*{re.escape(named)}\s*(?:<.*>)?", plain, re.S):
        return f"it is inside '{plain}', where hfuse cannot give it the part's view of the block"
    return None


def _not_convertible(item: TopLevelItem) -> str | None:
    """Why the host's object of ``item`` cannot be copied into a part's copy (None: it can)."""
    found = struct_body(item.text)
    if found is None:
        return "hfuse found no body to copy it by"
    node, body = found
    if any(c.type == "base_class_clause" for c in node.children):
        return "it has base classes, which hfuse does not copy from the host's object"
    if any(c.type == "virtual" for c in walk(body)):
        return "it has virtual functions: its objects hold the host's function table"
    return data_members(body)[1]


def host_twin(copy: str, plain: str) -> str:
    """``copy`` (a part's copy of a type, named ``plain``) without its member functions and
    named ``plain_host``: the layout of the host's objects, for the fused kernel's parameter."""
    found = struct_body(copy)
    assert found is not None, "host_made_types admits only types with a body"
    node, body = found
    edits = [TextEdit.replace(c, "") for c in body.named_children if is_member_function(c)]
    # every member public, so that the part's copy can read them (access does not change the layout)
    edits += [TextEdit.replace(c, "public") for c in body.named_children if c.type == "access_specifier"
              and c.text.decode().rstrip(":").strip() != "public"]
    keyword = node.children[0] if node.children and node.children[0].type == "class" else None
    if keyword is not None:
        edits.append(TextEdit.replace(keyword, "struct"))
    twin = apply_edits(copy.encode(), edits)
    return re.sub(rf"\b{re.escape(plain)}\b", f"{plain}_host", twin)


def type_copy(text: str, ctx: PartContext, host_made: bool = False) -> str:
    """Insert the context member and constructor right after the type's opening brace.

    ``text`` is the type's definition with its names already renamed to the part's copy.
    Each struct/class body of the definition (one per definition; explicit
    specialisations are separate items) gets them. ``host_made``: the kernel takes an
    object of the type from the host; the copy is preceded by its twin of the host's
    layout (``host_twin``) and is made from one, member by member, with the context.
    """
    data = text.encode()
    root = parse(data).root_node
    edits = []
    for node in walk(root):
        if node.type in ("struct_specifier", "class_specifier"):
            body, name = node.child_by_field_name("body"), node.child_by_field_name("name")
            if body is None or name is None:
                continue
            plain = name.text.decode().split("<")[0].strip()
            access = "public:\n  " if node.type == "class_specifier" else ""
            # a base that is a context type too (CRTP's KernelBase<Derived>) has only the constructor taking it
            # (not a header's base that merely names the copy: tlib::Base<Stepper__hf2>)
            viewed = [compact(b.text.decode()) for c in node.children
                      if c.type == "base_class_clause" for b in c.named_children
                      if b.type in ("type_identifier", "template_type", "qualified_identifier")
                      and re.sub(r"<.*", "", compact(b.text.decode()), flags=re.S).rsplit("::", 1)[-1]
                      .endswith(f"__hf{ctx.index}")]
            bases = "".join(f"{b}(hf_part_ctx), " for b in viewed)
            copy_names = frozenset(ctx.clone_name(name) for name in ctx.context_type_names)
            # (and the aliases of one: ``using Reducer = Reducer__hf2<T, 1>;`` then ``Reducer reducer_;``)
            copy_names |= {alias for alias, _ in ctx.context_type_aliases} | {
                m.group(1) or m.group(4) for m in MEMBER_ALIAS.finditer(body.text.decode())
                if (named := ALIASED.fullmatch((m.group(2) or m.group(3)).strip())) and named.group(1) in copy_names}
            own, view_alone = constructor_edits(body, plain, f"{CTX}(hf_part_ctx)", copy_names, viewed)
            edits += own
            member = f"\n  {access}const hfuse_ctx& {CTX};  // hfuse: this part's view of the block\n"
            if view_alone:
                member += (f"  __device__ explicit {plain}(const hfuse_ctx& hf_part_ctx) : {bases}{CTX}(hf_part_ctx)"
                           f"{member_initialisers(body, copy_names)} {{}}\n")
            if host_made:
                copies = "".join(f"    memcpy((void*)&{f}, (const void*)&hf_host.{f}, sizeof({f}));\n"
                                 for f in data_members(body)[0])
                member += (f"  // the host's object ({plain}_host, the same members) with this part's view of the block\n"
                           f"  template <class HfHost>\n"
                           f"  __device__ {plain}(const hfuse_ctx& hf_part_ctx, const HfHost& hf_host) : "
                           f"{CTX}(hf_part_ctx) {{\n{copies}  }}\n")
            edits.append(TextEdit(body.start_byte + 1, body.start_byte + 1, member))
            values = value_constructors(text, plain, f"{bases}{CTX}(hf_part_ctx)", copy_names)
            if values:
                edits.append(TextEdit(body.end_byte - 1, body.end_byte - 1, values))
            if not host_made:
                return apply_edits(data, edits)
            note = (f"// hfuse: the layout of the host's objects of this type (its members, not its member "
                    f"functions):\n// the fused kernel takes them so, and makes {plain} of them\n")
            return f"{note}{host_twin(text, plain)}\n\n{apply_edits(data, edits)}"
    return apply_edits(data, edits)
