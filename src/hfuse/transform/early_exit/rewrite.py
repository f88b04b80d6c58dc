"""The early-exit rewrite from one definition to its safe text, and helpers given the flag."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import tree_sitter as ts

from ...frontend.parse import walk
from ...errors import HFuseError, Location
from ..cuda_syntax import called_name
from ..context import PartContext
from ..definition import Definition
from ..edits import TextEdit
from .emit import RegionWriter
from .function import ParsedFunction
from ..program_functions import Helpers
from .plan import Item
from .syntax import _CALLED, CALLER_FLAG, _escapes, FLAG, _guard, _indented, _parameters, _real, _RED, _WARP_SYNC




def _region_start(fn: ParsedFunction) -> int | None:
    """Index of the first top-level statement the region starts at (None: nothing to do)."""
    candidates = _early_returns(list(fn.body.named_children), fn)
    return candidates[0] if candidates else None


def _early_returns(statements: list[ts.Node], fn: ParsedFunction) -> list[int]:
    """Indices of the top-level statements, up to the last that reaches a barrier, from which
    some thread may leave. A ``return`` that is the body's last statement leaves nothing
    behind it (``return Reducer(s);``, ``return block_sum(v);``: every thread runs it)."""
    reach = [i for i, s in enumerate(statements) if fn.reaches(s)]
    if not reach:
        return []
    return [i for i, s in enumerate(statements[: reach[-1] + 1]) if _escapes(s)
            and not (i == len(statements) - 1 and s.type == "return_statement")]


def _rewrite(fn: ParsedFunction, exits: bool) -> str:
    statements = list(fn.body.named_children)
    if fn.flagged:
        start: int | None = 0
        candidates = [0]
    else:
        candidates = _early_returns(statements, fn)
        if not candidates:
            return fn.text
        start = candidates[0]
        fn.first_return = _escapes(statements[start])[0]
    gotos = [n for n in walk(fn.body) if n.type == "goto_statement"]
    while True:
        items = fn.plan(statements[start:], top=True)
        fn.compute_uniform(fn.guarded(items))
        head = items[0] if items else None
        if fn.flagged or head is None or head.kind != "guard":
            break
        condition, _ = _guard(head.node)
        if fn.non_uniform(condition, fn.uniform) is not None:
            break
        # a block-uniform guard stays a plain return: the region starts at the next one
        rest = [i for i in candidates if i > start]
        if not rest:
            return fn.text
        start = rest[0]
        fn.first_return = _escapes(statements[start])[0]
    if gotos:
        raise fn.refuse(gotos[0], f"'goto' at line {fn.line(gotos[0])}: hfuse does not rewrite functions with goto")
    if fn.is_kernel and not exits:
        _check_warp_operations(fn, statements[start:])
    rewrite = RegionWriter(fn, exits, flagged)
    indent = " " * statements[0].start_point[1] if statements else "  "
    out = [_indented(fn.src(s), indent) for s in statements[:start]]
    out.append(f"{indent}bool {FLAG} = {CALLER_FLAG if fn.flagged else 'true'};")
    out.extend(rewrite.region(items, indent))
    closing = " " * fn.body.end_point[1] if fn.body.end_point[1] > 0 else ""
    new_body = "{\n" + "\n".join(out) + "\n" + closing[:-1] + "}"
    data = fn.data
    head_text = data[: fn.body.start_byte].decode()
    if fn.flagged:
        params = fn.params
        inner = data[params.start_byte + 1 : params.end_byte - 1].decode()
        real = _real(params.named_children)
        extra = f"bool {CALLER_FLAG} = true"
        joined = extra if not real or inner.strip() == "void" else f"{inner}, {extra}"
        head_text = data[: params.start_byte].decode() + f"({joined})" + data[params.end_byte : fn.body.start_byte].decode()
    return head_text + new_body + data[fn.body.end_byte :].decode()


def _check_warp_operations(fn: ParsedFunction, region: list[ts.Node]) -> None:
    """In flag mode the threads that returned stay alive next to the active ones of their warp:
    a full-mask warp operation in the region (or in a function it calls) would wait for them."""
    for statement in region:
        match = _WARP_SYNC.search(fn.src(statement))
        if match is not None:
            raise fn.refuse(statement, _warp_why(match.group(0), f"line {fn.line(statement)}"), hint=_WARP_HINT)
    seen: set[str] = set()
    todo = [m.group(1) for s in region for m in _CALLED.finditer(fn.src(s))]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in fn.helpers.definitions(name):
            match = _WARP_SYNC.search(text)
            if match is not None:
                raise fn.refuse(region[0], _warp_why(match.group(0), f"'{name}'"), hint=_WARP_HINT)
            todo.extend(m.group(1) for m in _CALLED.finditer(text))


_WARP_HINT = "use horizontal fusion (the default), where the threads that returned exit, or keep this kernel unfused"


def _warp_why(op: str, where: str) -> str:
    return (f"in vertical fusion the threads that returned stay alive until the part ends, and the warp-synchronous "
            f"'{op}' ({where}) waits for every live thread of its warp: it would hang")


@dataclass(frozen=True)
class Attempt:
    text: str | None
    error: HFuseError | None
    params: tuple[str, ...] | None


def flagged(text: str, helpers: Helpers, file: str, kernel: str) -> Attempt:
    """The helper ``text`` taking the activity flag (memoised), or why it cannot."""
    memo = helpers.attempts
    key = text
    if key not in memo:
        params = _parameters(text)
        file, line = helpers.origins.get(text, (file, 1))
        try:
            fn = ParsedFunction(text, helpers, file, line - 1, kernel, flagged=True)
            if fn.is_kernel or fn.params is None:
                raise HFuseError("it is not a helper function", Location(file, 1, kernel))
            memo[key] = Attempt(_rewrite(fn, exits=False), None, params)
        except HFuseError as err:
            memo[key] = Attempt(None, err, params)
    return memo[key]


def _calls_in(items: list[Item], out: set[str]) -> set[str]:
    for item in items:
        if item.kind == "call" and item.call is not None and called_name(item.call) not in _RED:
            out.add(called_name(item.call))
        _calls_in(item.sub, out)
        _calls_in(item.other or [], out)
    return out


def _needed(helpers: Helpers) -> frozenset[str]:
    """Helpers some function calls from its region (so they take the activity flag): over all
    functions that synchronise, closed over the calls in the regions of those helpers."""
    if "needed" not in helpers.attempts:

        def region_calls(text: str, whole: bool) -> set[str]:
            try:
                fn = ParsedFunction(text, helpers, "", 0, "")
                statements = list(fn.body.named_children)
                start = 0 if whole else _region_start(fn)
                return set() if start is None else _calls_in(fn.plan(statements[start:], top=True), set())
            except Exception:  # a definition hfuse cannot plan: its own rewrite reports it
                return set()

        texts = {t for name in helpers.barriers for t in helpers.definitions(name)}
        todo = [n for t in texts for n in region_calls(t, whole=False)]
        needed: set[str] = set()
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.add(name)
            todo.extend(n for t in helpers.definitions(name) for n in region_calls(t, whole=True))
        helpers.attempts["needed"] = frozenset(needed)
    return helpers.attempts["needed"]


def make_early_exits_safe(
    text: str,
    helpers_with_barriers: "Helpers | Iterable[str]",
    file: str,
    line_base: int,
    kernel: str,
    *,
    exits: bool = False,
) -> str:
    """``text`` (one function definition) with its early returns made safe for named barriers.

    ``helpers_with_barriers``: a ``Helpers`` (``program_helpers(program)``), or just the names
    of the functions that synchronise (then calls to them after a return are refused).
    ``exits``: a return from this function ends the thread (a kernel body in horizontal
    fusion), so the threads that leave may exit when their warp keeps an active thread.
    A helper that some function calls after an early return gets the activity flag as an
    extra last parameter (see the module docstring).
    """
    helpers = Helpers.of(helpers_with_barriers)
    fn = ParsedFunction(text, helpers, file, line_base, kernel)
    if not fn.is_kernel and fn.name is not None and fn.name in _needed(helpers):
        attempt = flagged(text, helpers, file, kernel)
        if attempt.text is not None:
            return attempt.text
        # the caller that passes the flag refuses, naming both places; rewrite as usual meanwhile
    return _rewrite(fn, exits=exits and fn.is_kernel)


def early_exit_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    """The rewrite as edits: the whole definition, its early returns made safe (none when
    nothing changes). ``ctx.functions`` says what is known of the program's other functions."""
    safe = make_early_exits_safe(definition.text, ctx.functions, str(definition.file), definition.line_base,
                                 ctx.kernel, exits=ctx.return_exits)
    return [] if safe == definition.text else [TextEdit(0, len(definition.data), safe)]
