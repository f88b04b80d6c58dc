"""Where the code of each input stands around using-directives in the fused file.

``using namespace N;`` reaches every line after it in its scope: to the end of the
translation unit at file scope, or the rest of its namespace (which two inputs may share).
So does a using-declaration ``using N::name;``, for its one name. Compiled apart, a
directive reached its own file's code after it; in the fused file it reaches whatever hfuse
writes after it, other inputs' code included. There N's names join unqualified lookup: a
qualified ``detail::round_up`` of another input becomes ambiguous with ``N::detail`` (nvcc
refuses the file), and an unqualified call may find an overload of N's that the input never
saw and choose it by its arguments' types (a silently different kernel).

So every definition is placed by what it saw: the definitions that saw none of the fused
file's directives come first (shared ones and each part's copies, in their order), then a
directive and what saw it, then the next directive and what saw both, and so on. Each group
keeps its order, and no definition needs one of a later group (it compiled in a file where
the later group's directives, which it did not see, stood after it). Where what the
definitions saw does not grow like a chain (nothing, ``N``, ``N`` and ``M``), some code must
see a directive it did not: that is allowed only where what the directive brings is known
(a using-declaration's name, a namespace of the user's files) and the code mentions none of
it (it finds nothing more there), and the directives are ordered so that this holds. So is
a shared definition that one input wrote after a directive and another without it written
once where it sees less. Otherwise hfuse refuses, rather than let a directive reach code
that it did not reach.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import HFuseError, Location
from ..frontend.directive_names import IDENTIFIER, namespace_members
from ..frontend.model import SourceFile, TopLevelItem, scope_names
from ..frontend.resolve import using_declaration
from ..transform.specialize import PartCode, ScopedCode

_Code = tuple[frozenset[str], tuple[str, ...]]
"""A definition as a directive may affect it: the names it looks up, the namespaces it is in."""


@dataclass(frozen=True)
class Group:
    """Definitions that saw the same directives, in order; ``items`` begins with the
    directives that the group's code saw and no earlier group's did."""

    items: tuple[TopLevelItem, ...]
    parts: tuple[tuple[ScopedCode, ...], ...]
    """Per part: its definitions (types, helpers, body) of this group."""


def is_directive(item: TopLevelItem) -> bool:
    """``using namespace N;`` or ``using N::name;`` (an alias ``namespace A = N;`` names itself
    and brings nothing into lookup). One inside a namespace reaches that namespace's code after
    it, whichever input wrote it (two inputs often share a ``detail`` or a project's namespace)."""
    if item.kind == "using":
        return bool(item.nominates) and not item.keys
    return item.kind == "declaration" and using_declaration(item.text) is not None


def _statement(item: TopLevelItem) -> str:
    """The directive as written out: ``using namespace cute;``, ``using vendor::twice;``, and
    where it stands when not at file scope (``using namespace cute; (in namespace detail)``)."""
    if item.kind == "using":
        text = f"using namespace {(item.nominates or '').removeprefix('::')};"
    else:
        text = f"using {(using_declaration(item.text) or '').removeprefix('::')};"
    return f"{text} (in namespace {'::'.join(scope_names(item.scope))})" if scope_names(item.scope) else text


@dataclass(frozen=True)
class _Source:
    """One input as compiled apart: where its definitions stand, and its directives."""

    path: Path
    at_line: dict[tuple[str, int], int]
    at_text: dict[tuple[tuple, str], int]
    directives: tuple[tuple[int, str], ...]

    @classmethod
    def of(cls, source: SourceFile) -> "_Source":
        at_line: dict[tuple[str, int], int] = {}
        at_text: dict[tuple[tuple, str], int] = {}
        for index, item in enumerate(source.items):
            at_line.setdefault((str(item.file), item.line), index)
            at_text.setdefault((item.scope, item.text.strip()), index)
        directives = tuple((i, _statement(item)) for i, item in enumerate(source.items) if is_directive(item))
        return cls(source.path, at_line, at_text, directives)

    def position(self, file: Path | None, line: int, scope: tuple = (), text: str = "") -> int | None:
        found = self.at_line.get((str(file), line)) if file is not None else None
        return found if found is not None else self.at_text.get((scope, text.strip()))

    def seen(self, position: int) -> frozenset[str]:
        return frozenset(directive for at, directive in self.directives if at < position)


def place_by_directives(items: Sequence[TopLevelItem], parts: Sequence[PartCode], part_sources: Sequence[Path],
                        sources: Sequence[SourceFile]) -> list[Group]:
    """``items`` (the shared definitions, in order) and each part's code, in groups such that
    no using-directive or -declaration among ``items`` stands before code that did not see it
    (but where that is proved harmless); ``part_sources``: the input file of each part."""
    definitions = [(*code.types, *code.helpers, code.body) for code in parts]
    directives = frozenset(_statement(item) for item in items if is_directive(item))
    if not directives or not sources:  # (nothing to place, or nothing known of the inputs: as they come)
        return [Group(tuple(items), tuple(definitions))]
    apart = [_Source.of(source) for source in sources]
    known = _brought(sources, [item for item in items if is_directive(item)])
    reach = {_statement(item): scope_names(item.scope) for item in items if is_directive(item)}
    views: dict[int, frozenset[str]] = {}  # (by id: a definition's directives as it saw them)
    for item in items:
        if not is_directive(item):
            seen = [(source, source.seen(at)) for source in apart
                    if (at := source.position(item.file, item.line, item.scope, item.text)) is not None]
            views[id(item)] = _view(seen, directives, item, known, reach)
    # a part's copy is of a definition its own file wrote, which the inputs may share as another's
    # (one text, read once): found where it was written, then as that text in the part's file
    written_at = {(str(item.file), item.line): (item.scope, item.text) for source in sources for item in source.items}
    for written, path in zip(definitions, part_sources):
        source = next((s for s in apart if s.path == path), None)
        found = {id(d): at for d in written if source and d.file is not None
                 and (at := source.position(d.file, d.line, *written_at.get((str(d.file), d.line), ((), "")))) is not None}
        for definition in written:
            if id(definition) in found:
                views[id(definition)] = source.seen(found[id(definition)]) & directives
        body = views.get(id(written[-1]), directives)
        for definition in written:  # (hfuse's own, or not found: with the body)
            views.setdefault(id(definition), body)
    code = {id(d): (_names(d.text), scope_names(d.scope)) for d in [*items, *(d for written in definitions for d in written)]}
    order = _directive_order(views, code, directives, known, reach)
    groups = []
    for at in range(-1, len(order)):
        new = [item for item in items if is_directive(item) and at >= 0 and _statement(item) == order[at]]
        here = (lambda d: _last(views[id(d)], order) == at)  # (the group after the last directive it saw)
        groups.append(Group((*new, *(item for item in items if id(item) in views and here(item))),
                            tuple(tuple(d for d in written if here(d)) for written in definitions)))
    return groups


def _last(view: frozenset[str], order: Sequence[str]) -> int:
    return max((order.index(d) for d in view), default=-1)


def _directive_order(views: dict[int, frozenset[str]], code: dict[int, _Code], directives: frozenset[str],
                     known: dict[str, set[str]], reach: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """An order of the directives in which each definition, written after the last directive it
    saw, sees no other one, or only one whose names are known and its text mentions none of
    (so nothing it looks up finds more than it did). Where what the definitions saw grows like
    a chain, its order is one; otherwise up to 720 orders are tried."""
    grown = sorted(set(views.values()) | {directives}, key=lambda view: (len(view), sorted(view)))
    chain = tuple(d for smaller, larger in zip([frozenset(), *grown], grown) for d in sorted(larger - smaller))
    for order in itertools.chain([chain], itertools.islice(itertools.permutations(sorted(directives)), 720)):
        if len(order) == len(directives) and all(
                _unaffected(frozenset(order[:_last(view, order) + 1]) - view, code[key], known, reach)
                for key, view in views.items()):
            return order
    one, two = next(((sorted(a - b), sorted(b - a)) for a, b in itertools.combinations(
        sorted(set(views.values()), key=sorted), 2) if a - b and b - a), (sorted(directives), sorted(directives)))
    raise HFuseError(
        f"some of the inputs' code saw '{one[0]}' and not '{two[0]}', and other code the reverse: a using-directive "
        "reaches every line after it in its scope of the fused file, so hfuse cannot place both where each sees "
        "exactly what it saw",
        hint="qualify the names instead of 'using namespace' at file scope (or write the directive inside the "
             "functions that need it), or keep these kernels unfused")


def _brought(sources: Sequence[SourceFile], directives: Sequence[TopLevelItem]) -> dict[str, set[str]]:
    """What each directive whose names are known brings into lookup: ``using vendor::twice;``
    its one name; ``using namespace N;`` N's (``namespace_members``), N as the directive's place
    finds it (inside ``namespace kern``, ``detail`` is ``kern::detail`` where the user's
    files have one; otherwise, where a library's header might, its names are not known)."""
    members = namespace_members(sources)
    known = {}
    for item in directives:
        if item.kind != "using":
            known[_statement(item)] = {(using_declaration(item.text) or "").rsplit("::", 1)[-1]}
            continue
        written, scope = (item.nominates or "").removeprefix("::"), scope_names(item.scope)
        inner = "::".join((*scope, written)) if scope and not (item.nominates or "").startswith("::") else written
        if inner in members:
            known[_statement(item)] = members[inner]
    return known


def _view(seen: Sequence[tuple[_Source, frozenset[str]]], directives: frozenset[str], item: TopLevelItem,
          known: dict[str, set[str]], reach: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """The directives a shared definition saw where it was compiled apart. Where the inputs
    disagree (a header one included after its directive, one without), it is written where
    it sees what all of them saw, if what the others saw in addition is of a namespace of the
    user's files none of whose names its text mentions (so it found nothing there). A
    definition no input is known to have written stays where it always was, after them all."""
    if not seen:
        return directives
    views = {frozenset(s & directives) for _, s in seen}
    common = frozenset.intersection(*views)
    code = (_names(item.text), scope_names(item.scope))
    if len(views) == 1 or all(_unaffected(view - common, code, known, reach) for view in views):
        return common
    ordered = sorted(((source, s & directives) for source, s in seen), key=lambda view: len(view[1]), reverse=True)
    (first, saw), (second, other) = ordered[0], ordered[-1]
    directive = sorted(saw - other)[0]
    raise HFuseError(
        f"'{(item.names or ('a definition',))[0]}' is shared by {first.path.name}, where '{directive}' precedes "
        f"it, and {second.path.name}, where it does not: in the fused file it is written "
        "once, and either way one input's code would see other names than it saw compiled apart",
        Location(item.file, item.line),
        hint="include the shared header before the using-directive, or qualify the names instead of 'using "
             "namespace' at file scope, or keep these kernels unfused")


def _unaffected(directives: frozenset[str], code: _Code, known: dict[str, set[str]],
                reach: dict[str, tuple[str, ...]]) -> bool:
    """Whether code finds the same whether or not ``directives`` precede it: each is one inside
    a namespace the code is not in (it reaches only that namespace's code), or what it brings
    is known and the code names none of it."""
    names, scope = code
    return all(scope[:len(reach.get(d, ()))] != reach.get(d, ()) or (d in known and not known[d] & names)
               for d in directives)


def _names(text: str) -> frozenset[str]:
    """The names ``text`` looks up (``IDENTIFIER``)."""
    return frozenset(IDENTIFIER.findall(text))
