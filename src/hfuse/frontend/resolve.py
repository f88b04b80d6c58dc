"""Name resolution: what a name written in some namespace refers to.

Rewrites must know *which* function a call reaches and *which* namespace a qualifier
names, not just how they are spelled: ``detail::reduce`` inside ``namespace mylib`` is
``mylib::detail::reduce``; ``g::this_thread_block()`` is cooperative groups when
``namespace g = cooperative_groups;`` is in force. This follows C++'s unqualified and
qualified lookup closely enough for kernels (innermost enclosing namespace first, then
outwards; using-directives and namespace aliases at each level, file-scope and
function-local ones), without overload resolution or argument-dependent lookup: a name
resolves to every overload that shares its qualified name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Iterable

import tree_sitter as ts

from .model import FUNCTION_POINTER, INLINE, Scope, TopLevelItem, qualify, scope_names
from .parse import compact, parse, walk

COOPERATIVE_GROUPS = "cooperative_groups"


def _named(scope: Scope) -> tuple[str, ...]:
    return scope_names(scope)


def _levels(scope: Scope) -> list[str]:
    """Enclosing namespaces of ``scope`` as keys, innermost first, file scope ("") last."""
    named = _named(scope)
    return ["::".join(named[:i]) for i in range(len(named), -1, -1)]


def _join(*parts: str) -> str:
    return "::".join(p for p in parts if p)


_USING_DECLARATION = re.compile(r"^\s*using\s+(?!namespace\b)(?![A-Za-z_]\w*\s*=)([\w:\s]+::\s*\w+)\s*;\s*$")


def using_declaration(text: str) -> str | None:
    """What ``using ns::name;`` brings in (``ns::name``, no whitespace), or None for any
    other text (a using-directive, an alias declaration)."""
    match = _USING_DECLARATION.match(text)
    return compact(match.group(1)) if match else None


@dataclass(frozen=True)
class LocalNames:
    """Using-directives, using-declarations and namespace aliases written inside one
    function body."""

    usings: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    declarations: tuple[str, ...] = ()
    """What ``using ns::name;`` in the body brings in, as written (``ns::name``)."""

    @classmethod
    def of(cls, root: ts.Node) -> "LocalNames":
        usings, aliases, declarations = [], [], []
        for node in walk(root):
            if node.type == "using_declaration" and any(c.type == "namespace" for c in node.children):
                usings.append(compact(node.named_children[-1].text.decode()))
            elif node.type == "using_declaration" and (brought := using_declaration(node.text.decode())) is not None:
                declarations.append(brought)
            elif node.type == "namespace_alias_definition" and len(node.named_children) >= 2:
                aliases.append((node.named_children[0].text.decode(), compact(node.named_children[-1].text.decode())))
        return cls(tuple(usings), tuple(aliases), tuple(declarations))

    @classmethod
    def of_text(cls, text: str) -> "LocalNames":
        if "using" not in text and "namespace" not in text:
            return cls()
        return cls.of(parse(text.encode()).root_node)


_FUNCTION_TYPE_ALIAS = re.compile(
    r"\s*(?:template\s*<[^;{}]*>\s*)?(?:"
    r"typedef\b[^;{}()]*?(?:\(\s*(?:__\w+\s+)?[*&]\s*(?:const\s+)?\w+\s*\)|\b\w+)\s*\("  # (*name)(...), name(...)
    r"|using\s+\w+\s*=\s*(?![^;]*\b(?:decltype|sizeof|alignof)\b)[^;{}=()]*"
    r"(?:\(\s*(?:__\w+\s+)?[*&]\s*(?:const\s*)?\)\s*)?\()")  # = R (*)(...), = R(...)
"""A typedef or alias of a function pointer, reference or type."""
POINTER_DECLARATOR = re.compile(r"\(\s*(?:__\w+\s+)?[*&]\s*(?:const\s+)?\w+\s*(?:\[[^\]]*\]\s*)*\)\s*\(")
"""``(*op)(``, ``(&op)(``, ``(*ops[4])(``: a declarator of a pointer or reference to a function."""
_NOT_A_VARIABLE = re.compile(r"\s*(?:template|typedef|using|struct|class|union|enum|namespace|static_assert)\b")
_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "__restrict", "restrict", "static", "extern", "inline",
                         "constexpr", "__device__", "__constant__", "__managed__", "__shared__"})
_DEFINES_TYPE = re.compile(r"\s*(?:template\s*<[^;{]*>\s*)?(?:typedef\s+)?(?:struct|class|union|enum)\b[^;]*\{")


@dataclass
class Resolver:
    """The declared names of a merged program and the using/alias rules in force."""

    declared: set[str] = field(default_factory=set)
    """Qualified keys of everything declared at namespace scope (and member functions)."""
    namespaces: set[str] = field(default_factory=set)
    usings: dict[str, list[str]] = field(default_factory=dict)
    """Namespace key ("" for file scope) -> namespaces its using-directives nominate, as written."""
    aliases: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace key, alias) -> the aliased namespace, as written."""
    using_declarations: dict[str, list[str]] = field(default_factory=dict)
    """Namespace key -> what its ``using ns::name;`` declarations bring in, as written (``d::lanes``)."""
    value_macros: frozenset[str] = frozenset()
    """Macros of kept system headers the code uses as plain values (``SourceFile.value_macros``)."""
    undefined_device_functions: frozenset[str] = frozenset()
    """Keys of device functions the inputs declare and no input defines (their body is in a
    file hfuse was not given: separate compilation)."""
    type_namespaces: set[str] = field(default_factory=set)
    """Namespace keys ("" for file scope) that define a class, struct, union or enum: the
    namespaces argument-dependent lookup may search for a call's function."""
    inline_namespaces: set[tuple[str, str]] = field(default_factory=set)
    """(the key of the namespace it is in, its name) of each inline namespace: transparent
    in keys, so a written ``lib::v2::warp`` or ``v2::warp`` is looked up as ``lib::warp``."""
    class_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Class key -> the keys of its bases that member lookup searches (``ClassShape.bases``)."""
    hidden_friends: dict[str, set[str]] = field(default_factory=dict)
    """A function name -> the keys of the hidden friends of that name (``Function.hidden_friend``)."""
    class_fields: dict[str, frozenset[str]] = field(default_factory=dict)
    """Class key -> the names of its data members (``ClassShape.fields``)."""
    class_template_params: dict[str, frozenset[str]] = field(default_factory=dict)
    """Class key -> the template parameters its members see (``ClassShape.template_params``)."""
    unseen_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Class key -> its bases no input defines, as written (a toolkit's or library's
    class): which members they have is unknown."""
    function_pointer_types: set[str] = field(default_factory=set)
    """Keys of the type aliases that name a pointer, reference or type of function
    (``typedef float (*unary_op)(float);``): a call through a variable of one runs what it holds."""
    pointer_variables: set[str] = field(default_factory=set)
    """Keys of the file-scope variables that hold a function's address (``__device__ unary_op
    d_op;``): a call through one runs what the host or an initialiser put there."""
    pointer_fields: set[str] = field(default_factory=set)
    """Names of the data members, of any class, that hold a function's address (``op.f(x)``
    calls what ``f`` holds)."""

    @classmethod
    def of(cls, items: Iterable[TopLevelItem], function_keys: Iterable[str] = ()) -> "Resolver":
        resolver = cls()
        for item in items:
            for depth, name in enumerate(item.scope):
                if name.startswith(INLINE):
                    resolver.inline_namespaces.add(("::".join(_named(item.scope[:depth])), name.removeprefix(INLINE)))
            named = _named(item.scope)
            for i in range(1, len(named) + 1):
                resolver.namespaces.add("::".join(named[:i]))
            level = "::".join(named)
            if item.kind == "using" and item.nominates:
                if item.names:
                    resolver.aliases[(level, item.names[0])] = item.nominates
                else:
                    resolver.usings.setdefault(level, []).append(item.nominates)
                continue
            if item.kind == "declaration" and (brought := using_declaration(item.text)) is not None:
                resolver.using_declarations.setdefault(level, []).append(brought)
            resolver.declared.update(item.keys)
            resolver.declared.update(m.key for m in item.members)
            for friend in (m for m in item.members if m.hidden_friend):
                resolver.hidden_friends.setdefault(friend.name, set()).add(friend.key)
            if _DEFINES_TYPE.match(item.text):
                resolver.type_namespaces.add(level)
            elif _FUNCTION_TYPE_ALIAS.match(item.text):
                resolver.function_pointer_types.update(item.keys)
        resolver.declared.update(function_keys)
        for item in items:
            if resolver._holds_functions(item):
                resolver.pointer_variables.update(item.keys)
        for item in items:
            for shape in item.classes:
                bases = [(w, resolver.resolve(item.scope, w)) for w in shape.bases]
                key = qualify(item.scope, shape.name)
                resolver.class_bases[key] = tuple(b for _, b in bases if b is not None)
                resolver.class_fields[key] = frozenset(shape.fields)
                resolver.class_template_params[key] = frozenset(shape.template_params)
                resolver.pointer_fields.update(
                    name for name, written in zip(shape.fields, shape.field_types)
                    if written == FUNCTION_POINTER or resolver.holds_function(item.scope, written))
                if unseen := tuple(w for w, b in bases if b is None):
                    resolver.unseen_bases[key] = unseen
        return resolver

    def holds_function(self, scope: Scope, written_type: str, local: LocalNames = LocalNames()) -> bool:
        """Whether a variable of the type ``written_type`` (as declared in ``scope``) holds a
        function's address: the type is one of ``function_pointer_types``, cv-qualifiers aside."""
        if written_type == FUNCTION_POINTER:
            return True
        names = [w for w in re.findall(r"(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*", written_type)
                 if w not in _QUALIFIERS]
        return len(names) == 1 and self.resolve(scope, names[0], local, self.function_pointer_types) is not None

    def _holds_functions(self, item: TopLevelItem) -> bool:
        """A file-scope variable declared as a pointer to a function (``float (*op)(float)``) or
        of a function-pointer type (``__device__ unary_op d_op;``)."""
        if item.kind != "declaration" or item.function is not None or item.classes or _NOT_A_VARIABLE.match(item.text):
            return False
        declared = item.text.split("=", 1)[0]
        if POINTER_DECLARATOR.search(declared):
            return True
        words = re.findall(r"[\w:]+", declared.split("[")[0])
        return self.holds_function(item.scope, " ".join(words[:-1]))  # (the last is its name)

    def member(self, scope: Scope, owner: str, name: str, known: set[str]) -> tuple[str | None, str | None]:
        """What the unqualified ``name`` finds among the members of class ``owner`` (of
        namespace ``scope``) and of its bases, as C++ looks from a member function: the
        member's key (None: no member of that name; a data member's is not in ``known``, a
        functor or pointer the call goes through), and the first base on the way that no
        input defines (None: every base was seen), whose members may hide the rest."""
        classes, seen, unseen = [qualify(scope, owner)], set(), None
        while classes:  # the class first, then its bases (in a valid program one member is found)
            key = classes.pop(0)
            if key in seen:
                continue
            seen.add(key)
            found = f"{key}::{name}"
            if (found in known and found not in self.hidden_friends.get(name, ())) or name in self.class_fields.get(key, ()):
                return found, None
            unseen = unseen or next(iter(self.unseen_bases.get(key, ())), None)
            classes.extend(self.class_bases.get(key, ()))
        return None, unseen

    # -- namespaces --------------------------------------------------------------------
    def namespace(self, scope: Scope, written: str, local: LocalNames = LocalNames()) -> str:
        """The namespace a qualifier names (aliases followed), as a key without leading '::'."""
        parts = [p for p in compact(written).split("::")]
        absolute = parts and parts[0] == ""
        parts = self._without_inline([p for p in parts if p], scope, bool(absolute), keep_last=False)
        if not parts:
            return ""
        if not absolute:
            target = self._alias(scope, parts[0], local)
            if target is not None:
                return _join(self.namespace((), "::" + target), *parts[1:])
            for level in _levels(scope):
                if _join(level, *parts) in self.namespaces:
                    return _join(level, *parts)
        return "::".join(parts)

    def _alias(self, scope: Scope, name: str, local: LocalNames) -> str | None:
        for alias, target in local.aliases:
            if alias == name:
                return target.lstrip(":")
        for level in _levels(scope):
            if (level, name) in self.aliases:
                return self.aliases[(level, name)].lstrip(":")
        return None

    def _nominated(self, scope: Scope, level: str, local: LocalNames, innermost: bool) -> list[str]:
        written = list(self.usings.get(level, []))
        if innermost:
            written += list(local.usings)
        return [self.namespace(scope, w, local) for w in written]

    # -- names -------------------------------------------------------------------------
    def resolve(self, scope: Scope, written: str, local: LocalNames = LocalNames(), known: set[str] | None = None) -> str | None:
        """The qualified key ``written`` names from ``scope``, or None if nothing declared matches.

        ``known`` narrows the search to a set of keys (e.g. only functions).
        """
        universe = self.declared if known is None else known
        text, before = re.sub(r"<[^<>]*>", "", compact(written)), None
        while text != before:  # nested template arguments (an unbalanced '<' stays)
            text, before = re.sub(r"<[^<>]*>", "", text), text
        absolute = text.startswith("::")
        parts = self._without_inline([p for p in text.split("::") if p], scope, absolute)
        if not parts:
            return None
        if absolute:
            key = "::".join(parts)
            return key if key in universe else None
        if len(parts) == 1:
            brought = next((d for d in local.declarations if d.rsplit("::", 1)[-1] == parts[0]), None)
            if brought is not None:  # ``using ns::name;`` in the body: that name, from the body's scope
                return self.resolve(scope, brought, replace(local, declarations=()), known)
        if len(parts) > 1:
            target = self._alias(scope, parts[0], local)
            if target is not None:  # an alias names its namespace from file scope
                return self.resolve((), "::" + _join(target, *parts[1:]), local, known)
        for depth, level in enumerate(_levels(scope)):
            key = _join(level, *parts)
            if key in universe:
                return key
            if (found := self._brought(level, parts, known)) is not None:
                return found
            for nominated in self._nominated(scope, level, local, innermost=depth == 0):
                key = _join(nominated, *parts)
                if key in universe:
                    return key
        return None

    def _without_inline(self, parts: list[str], scope: Scope, absolute: bool, keep_last: bool = True) -> list[str]:
        """``parts`` of a written name without the inline namespaces it names (keys leave
        them out): ``v2`` after ``lib`` when ``lib`` has an inline ``v2``; first, when an
        enclosing namespace (file scope for ``::v2``) has one. ``keep_last``: the last part
        names the entity (a name), not a namespace (``using namespace lib::v2;``)."""
        if not self.inline_namespaces:
            return parts
        out: list[str] = []
        for i, part in enumerate(parts):
            if out:  # (an inline namespace's parent key leaves out the inline ones around it too)
                inline = any(name == part and parent.rsplit("::", 1)[-1] == out[-1]
                             for parent, name in self.inline_namespaces)
            else:
                levels = [""] if absolute else _levels(scope)
                inline = any(name == part and parent in levels for parent, name in self.inline_namespaces)
            if not (inline and (i < len(parts) - 1 or not keep_last)):
                out.append(part)
        return out

    def _brought(self, level: str, parts: list[str], known: set[str] | None) -> str | None:
        """What a ``using ns::name;`` of namespace ``level`` makes ``name`` (or ``name::rest``) mean there."""
        for brought in self.using_declarations.get(level, ()):
            if brought.rsplit("::", 1)[-1] == parts[0]:
                scope = tuple(level.split("::")) if level else ()
                found = self.resolve(scope, "::".join([brought, *parts[1:]]), LocalNames(), known)
                if found is not None:
                    return found
        return None

    def brought_alike(self, scope: Scope, simple: str, known: set[str] | None = None) -> set[str]:
        """The keys that namespace-scope ``using ns::simple;`` declarations around ``scope``
        bring under the name ``simple``: beside a function of that name declared there, an
        unqualified call's overload set holds them too (``resolve`` answers one key)."""
        return {found for level in _levels(scope) for brought in self.using_declarations.get(level, ())
                if brought.rsplit("::", 1)[-1] == simple
                and (found := self.resolve(tuple(level.split("::")) if level else (), brought, LocalNames(), known))}

    def brought_by(self, key: str, known: set[str] | None = None) -> list[tuple[Scope, str]]:
        """The namespace-scope ``using ns::name;`` declarations that bring in ``key``: (the
        namespace they are in, what they name as written)."""
        return [(tuple(level.split("::")) if level else (), brought)
                for level, names in self.using_declarations.items() for brought in names
                if self.resolve(tuple(level.split("::")) if level else (), brought, LocalNames(), known) == key]

    def nominates_cooperative_groups(self, scope: Scope, local: LocalNames = LocalNames()) -> bool:
        """Whether a ``using namespace cooperative_groups;`` (or of an alias of it) is in force
        in ``scope`` or the body ``local`` describes: its functions may be called unqualified."""
        return any(nominated.split("::")[0] == COOPERATIVE_GROUPS for depth, level in enumerate(_levels(scope))
                   for nominated in self._nominated(scope, level, local, innermost=depth == 0))

    def is_cooperative_groups(self, scope: Scope, qualifier: str, local: LocalNames = LocalNames()) -> bool:
        """Whether a qualifier (``cg``, ``g``, ``cooperative_groups``, ``::cooperative_groups``) is CG."""
        return self.namespace(scope, qualifier, local).split("::")[0] == COOPERATIVE_GROUPS
