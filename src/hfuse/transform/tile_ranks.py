"""Where a cooperative-groups tile's ``meta_group_rank()`` may be asked: of a tile that its
function cut from the thread block, or of a tile parameter that every caller gives such a
tile (DeepSpeed's ``reduce::block(tb, warp, val)`` takes the warp its kernel cut).

A tile cut from the block counts the fused block's tiles; the part's are counted from its
first warp (``cooperative_groups._meta_group_edits``). That rewrite is right for a parameter
only if every tile reaching it was cut from the block: one cut from another tile counts its
parent's tiles, which fusion does not move, and a copy or a tile from elsewhere is unknown.
``check_tile_parameters`` proves it over the calls of a kernel, or refuses.

A member called through an object whose type hfuse does not know (DeepSpeed's
``group_stats.template get_params<...>(tb, warp)``, ``group_stats`` an ``auto`` an earlier
call returned) is a call of every member of that name: what each such call gives is
checked for every member function of the name, beside the calls that name it.
"""
from __future__ import annotations

from typing import Mapping, Protocol, Sequence

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.model import Function
from ..frontend.parse import walk
from .cuda_syntax import tile_argument_place

META_GROUP = ("meta_group_rank", "meta_group_size")

TileArgument = tuple[str, int, "str | int", int]
"""(callee key, argument index, what it is given: a place of ``tile_places`` or the
caller's own parameter index, line). The callee of a member call whose object's type is
not known is ``.NAME`` (``member_callee``)."""


def member_callee(call: ts.Node) -> str | None:
    """``.get_params`` of ``obj.get_params(...)`` and ``obj.template get_params<N>(...)``:
    the callee of a member call, by name alone."""
    fn = call.child_by_field_name("function")
    field = fn.child_by_field_name("field") if fn is not None and fn.type == "field_expression" else None
    while field is not None and field.type in ("dependent_name", "template_method"):
        field = field.child_by_field_name("name") if field.type == "template_method" else field.named_child(0)
    return f".{field.text.decode()}" if field is not None and field.type == "field_identifier" else None


def ranked_tiles(root: ts.Node) -> list[tuple[str, ts.Node]]:
    """Every ``t.meta_group_rank()``/``t.meta_group_size()``: (the object's name, the call)."""
    found = []
    for node in walk(root):
        if node.type != "call_expression":
            continue
        fn = node.child_by_field_name("function")
        member = fn.child_by_field_name("field") if fn is not None and fn.type == "field_expression" else None
        target = fn.child_by_field_name("argument") if member is not None else None
        if member is not None and member.text.decode() in META_GROUP and target is not None:
            found.append((target.text.decode(), node))
    return found


def tile_arguments(callee: str, call: ts.Node, function: Function, places: dict[str, str],
                   block_vars: set[str], line: int) -> list[TileArgument]:
    """What a call gives each of the callee's parameters, as far as tiles go."""
    args = call.child_by_field_name("arguments")
    params = {p.name: i for i, p in enumerate(function.params) if p.name}
    out: list[TileArgument] = []
    for index, arg in enumerate(args.named_children if args is not None else ()):
        place = tile_argument_place(arg, places, block_vars)
        given: str | int = params[arg.text.decode()] if place == "param" and arg.text.decode() in params else place
        out.append((callee, index, given, line))
    return out


class _Facts(Protocol):
    function: Function
    tile_arguments: list[TileArgument]
    ranked_tile_params: list[tuple[int, int, str]]


def check_tile_parameters(kernel: Function, reachable: Sequence[str], facts: Mapping[str, Sequence[_Facts]]) -> None:
    """Refuse a tile parameter asked its place unless every call reaching it gives a tile
    cut from the block (directly, or through the callers' own such parameters)."""
    given: dict[tuple[str, int], list[tuple[str | int, str, int]]] = {}
    for name in reachable:
        for f in facts[name]:
            for callee, index, what, line in f.tile_arguments:
                given.setdefault((callee, index), []).append((what, name, line))

    members = {name for name in reachable for f in facts[name] if f.function.owner is not None}

    def from_block(key: str, index: int, path: frozenset[tuple[str, int]]) -> tuple[str, int] | None:
        """None if every caller gives (key, index) a block tile, else (caller, line) of one that may not."""
        calls = given.get((key, index), [])
        if key in members:  # and the member calls of its name whose object's type is not known
            calls = calls + given.get(("." + key.rsplit("::", 1)[-1], index), [])
        if not calls or (key, index) in path:
            return (key, 0)
        for what, caller, line in calls:
            if what == "block":
                continue
            if not isinstance(what, int):
                return (caller, line)
            if from_block(caller, what, path | {(key, index)}) is not None:
                return (caller, line)
        return None

    for name in reachable:
        for f in facts[name]:
            for index, line, text in f.ranked_tile_params:
                if (culprit := from_block(name, index, frozenset())) is not None:
                    caller, at = culprit
                    which = f"a call ({caller}, line {at})" if at else "a call hfuse does not see (or a recursive one)"
                    raise HFuseError(
                        f"'{text}' asks the place of a tile handed in, and {which} may give it a "
                        "tile not cut from the thread block: fused, a tile cut from the block counts from the part's "
                        "first warp, one cut from another tile does not, and hfuse cannot tell which it gets",
                        Location(f.function.file, line, kernel.name),
                        hint="give the function the tile tiled_partition<N>(block) returns (no copy, no sub-tile), "
                        "or count tiles from thread_rank()")
