"""Recursion in what a kernel reaches: refused where a cycle runs through what reads the
block or synchronises (each part gets its own copy of such a function, which a cycle cannot
be given); other recursion is emitted as written."""
from __future__ import annotations

from typing import AbstractSet, Mapping, Protocol, Sequence

from ..errors import HFuseError, Location
from ..frontend.model import Function


class CallFacts(Protocol):
    """What this module reads of a function's facts (``analysis.FunctionFacts``)."""

    function: Function
    calls: set[str]
    instance_calls: set[str]
    plain_calls: set[str]


def check_recursion(kernel: Function, facts: Mapping[str, Sequence[CallFacts]], special: AbstractSet[str]) -> None:
    """Refuse a call cycle through ``special`` functions, those that read the block or
    synchronise (each part gets its own copy of such a function, which a cycle cannot be
    given); other recursion is emitted as written, shared by the parts, in the file's order:
    C++'s to compile (and templates' instances often only look alike: vec_t<T>::cast_from
    calling vec_t<U>'s). ``facts``: each function's, by key. A cycle holds
    such a function exactly where the strongly connected component it lies in does: the
    components are found once (Tarjan), not by walking every path (exponential in a header
    library's call graph: FlashInfer's vector casts took 9 s)."""
    calls: dict[str, list[str]] = {}
    pending = [kernel.key]
    while pending:
        name = pending.pop()
        if name in calls:
            continue
        calls[name] = _callees(name, facts)
        pending.extend(c for c in calls[name] if c not in calls)
    for component in _components(kernel.key, calls):
        if len(component) == 1 and component[0] not in calls[component[0]]:
            continue  # (no cycle)
        needing = sorted(set(component) & special)
        if needing:
            cycle = _cycle_through(needing[0], set(component), calls)
            closing = facts[cycle[-2]][0].function
            raise HFuseError(
                f"recursion is not supported ({' -> '.join(cycle)})",
                Location(closing.file, closing.line, kernel.name),
                hint="a part's own copy of what reads the block or synchronises is built for each part; "
                "rewrite the recursion as a loop (recursion that neither reads the block nor synchronises fuses)",
            )


def _callees(name: str, facts: Mapping[str, Sequence[CallFacts]]) -> list[str]:
    """The functions ``name`` calls at run time (a template's calls of other instances of
    itself are compile-time recursion, ended by a specialisation), in order."""
    out: set[str] = set()
    for f in facts.get(name, []):
        for callee in (f.calls - (f.instance_calls - f.plain_calls)) & facts.keys():
            if callee == name and _primary_of_specialisations(f, facts[name]):
                continue  # (``to(val)`` in the primary of ``to<float>(__half)``...: a name, not a cycle)
            out.add(callee)
    return sorted(out)


def _components(root: str, calls: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The strongly connected components of the call graph ``calls`` reached from ``root``
    (Tarjan's algorithm, iterative: a call chain may be deeper than Python's stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    work = [(root, 0)]
    while work:
        name, i = work.pop()
        if i == 0:
            index[name] = low[name] = len(index)
            stack.append(name)
            on_stack.add(name)
        callees = calls[name]
        if i < len(callees):
            work.append((name, i + 1))
            callee = callees[i]
            if callee not in index:
                work.append((callee, 0))
            elif callee in on_stack:
                low[name] = min(low[name], index[callee])
            continue
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == name:
                    break
            found.append(component[::-1])
        if work:  # (the caller takes its callee's low link)
            caller = work[-1][0]
            low[caller] = min(low[caller], low[name])
    return found


def _cycle_through(start: str, component: set[str], calls: Mapping[str, Sequence[str]]) -> list[str]:
    """A shortest call cycle from ``start`` back to it inside its component: ``[start, ..., start]``."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for name in frontier:
            for callee in calls[name]:
                if callee == start:
                    path = [name]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1] + [start]
                if callee in component and callee not in came_from:
                    came_from[callee] = name
                    following.append(callee)
        frontier = following
    return [start, start]


def _primary_of_specialisations(f: CallFacts, family: Sequence[CallFacts]) -> bool:
    """A function template's primary that calls its own name, beside explicit specialisations
    of it (``template <class TO, class FROM> TO to(FROM v) { return to(v); }``, then ``template
    <> float to(__half v)``...): instances run the specialisations, and the primary's call is
    the compiler's to resolve (C++ allows recursion; no copy of it must precede another)."""
    return bool(f.function.template_header) and not f.function.is_explicit_specialisation \
        and any(g.function.is_explicit_specialisation for g in family)
