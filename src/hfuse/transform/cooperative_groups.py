"""CooperativeGroupsRewrite: a part's ``thread_block`` is its own slice of the fused block.

``this_thread_block()`` would describe the fused block; it becomes
``hfuse_thread_block<ID, N>``, a small type with the same methods (sync, thread_rank,
size, thread_index, group_index, dim_threads) over the part's threads. Warp tiles cut
from a block stay as they are (parts are warp aligned, so a tile of at most 32 threads
is the same warp either way). A tile's place among the block's tiles is the part's, not
the fused block's: ``tile.meta_group_rank()`` and ``tile.meta_group_size()`` of a tile cut
from the part's block are rewritten to count from the part's first thread, and so are those
of a tile parameter that every caller gives such a tile (``tile_ranks.py`` proves it); a
tile cut from another tile counts among its parent's and stays as written; any other use
of them (a copy, a tile from elsewhere) is refused.

``this_grid()`` likewise becomes ``hfuse_grid_group``, the part's own grid: a grid-stride loop
over ``grid.thread_rank()`` and ``grid.size()`` counts the part's blocks and threads. Only such
queries are kept (``cuda_syntax.GRID_QUERIES``); ``grid.sync()`` needs a cooperative launch of
the kernel's own grid and is refused by the analysis.
"""
from __future__ import annotations

from typing import Mapping

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.constant import evaluate
from ..frontend.parse import line_of, walk
from .cuda_syntax import (called_name, cg_block_variables, declared_tile, grid_group_uses, is_cg_block_call,
                          is_cg_block_type, is_cg_grid_call, is_cg_grid_type, tile_places)
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit

_REAL_BLOCK = "cooperative_groups::this_thread_block()"
GRID_TYPE = "hfuse_grid_group"
"""A part's grid group (``codegen/preamble.py``): ranks and sizes of its own grid and block."""


def cooperative_groups_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    root, file, line_base = definition.root, str(definition.file), definition.line_base
    cg = definition.cg_spellings(ctx.resolver)
    edits: list[TextEdit] = []
    block_type = f"hfuse_thread_block<{ctx.barrier_args}>"
    block_vars = cg_block_variables(root, cg)
    tiles: dict[str, int | None] = {}
    # the kernel's own body: its instance's constants; a helper's: what Clang told of its tile sizes
    known = dict(ctx.kernel_constants) if (file, definition.line) == ctx.kernel_at else {
        text: value for at, line, text, value in ctx.helper_constants if (at, line) == (file, definition.line)}
    constants = {**known, **local_constants(root, known)}
    places = tile_places(root, block_vars)
    for node in walk(root):
        if node.type == "call_expression" and called_name(node) == "tiled_partition":
            declared = declared_tile(node)
            if declared is not None and places.get(declared) == "block" and _tile_size_text(node) is not None:
                # None: a size known only when the template is instantiated (tiled_partition<kTile>)
                tiles[declared] = _tile_size(node, constants)
    # a tile parameter asked its place is given block tiles by every caller (the analysis
    # refuses the program otherwise: ``tile_ranks.check_tile_parameters``); its size is the tile's own
    tiles.update({name: None for name, place in places.items() if place == "param"})
    sub_tiles = {name for name, place in places.items() if place == "sub"}
    edits.extend(_meta_group_edits(root, tiles, sub_tiles, ctx, file, line_base))
    for node in walk(root):
        if is_cg_block_call(node):
            # a block passed straight to tiled_partition stays the real block (see _tile_edits)
            if not _is_tile_parent(node):
                edits.append(TextEdit.replace(node, f"{block_type}({CTX})"))
        elif is_cg_block_type(node, cg):
            edits.append(TextEdit.replace(node, block_type))
        elif node.type == "call_expression" and called_name(node) == "tiled_partition":
            edits.extend(_tile_edits(node, block_vars, ctx, file, line_base, constants))
    queries, _ = grid_group_uses(root, cg)  # any other use of the grid was refused by the analysis
    for node in queries:
        if is_cg_grid_call(node):
            edits.append(TextEdit.replace(node, f"{GRID_TYPE}({CTX})"))
        elif is_cg_grid_type(node, cg):
            edits.append(TextEdit.replace(node, GRID_TYPE))
    return edits


def _tile_edits(call: ts.Node, block_vars: set[str], ctx: PartContext, file: str, line_base: int,
                constants: dict[str, int]) -> list[TextEdit]:
    args = call.child_by_field_name("arguments").named_children
    parents = [a for a in args[:1] if (a.type == "identifier" and a.text.decode() in block_vars) or is_cg_block_call(a)]
    if not parents:
        return []
    size = _tile_size(call, constants)
    if size is None or size > 32:
        written = _tile_size_text(call)
        raise HFuseError(
            f"tiled_partition of a thread block into tiles of {written or 'unknown size'}"
            + (f" = {size}" if size is not None and written != str(size) else "") + " threads: "
            "only warp-sized or smaller tiles (a constant <= 32) can be kept when fused",
            Location(file, line_base + line_of(call), ctx.kernel),
        )
    # the real block's warps are the part's warps: parts start on warp boundaries
    return [TextEdit.replace(parents[0], _REAL_BLOCK)]


def _is_tile_parent(node: ts.Node) -> bool:
    """Whether ``node`` is the first argument of a ``tiled_partition`` call."""
    parent = node.parent
    if parent is None or parent.type != "argument_list":
        return False
    call = parent.parent
    first = parent.named_children[0] if parent.named_children else None
    return (call is not None and call.type == "call_expression" and called_name(call) == "tiled_partition"
            and first is not None and first.start_byte == node.start_byte)


def _tile_size_text(call: ts.Node) -> str | None:
    """The tile size as written: the template argument, or the second call argument."""
    fn = call.child_by_field_name("function")
    while fn is not None and fn.type == "qualified_identifier":
        fn = fn.child_by_field_name("name")
    texts = []
    if fn is not None and fn.type == "template_function":
        texts = [a.text.decode() for a in fn.child_by_field_name("arguments").named_children]
    texts += [a.text.decode() for a in call.child_by_field_name("arguments").named_children[1:2]]
    return texts[0] if texts else None


def _tile_size(call: ts.Node, constants: dict[str, int]) -> int | None:
    text = _tile_size_text(call)
    return evaluate(text, constants) if text is not None else None


def local_constant_initializers(root: ts.Node) -> dict[str, str]:
    """The integer constants a definition declares and their initializers as written
    (``constexpr int kWarp = 32;``, ``const int kTile = kWarp / 2;``), in order."""
    found: dict[str, str] = {}
    for node in walk(root):
        if node.type != "declaration":
            continue
        words = {c.text.decode() for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
        if not words & {"constexpr", "const"}:
            continue
        for declarator in node.children_by_field_name("declarator"):
            target, value = declarator.child_by_field_name("declarator"), declarator.child_by_field_name("value")
            if declarator.type == "init_declarator" and target is not None and target.type == "identifier" and value is not None:
                found[target.text.decode()] = value.text.decode()
    return found


def local_constants(root: ts.Node, known: Mapping[str, int] | None = None) -> dict[str, int]:
    """The values of ``local_constant_initializers``, each evaluated from ``known`` (the
    instance's template arguments) and the ones before it."""
    constants: dict[str, int] = {}
    for name, text in local_constant_initializers(root).items():
        number = evaluate(text, {**(known or {}), **constants})
        if number is not None:
            constants[name] = number
    return constants


def tile_size_texts(root: ts.Node) -> list[str]:
    """The tile sizes a definition's ``tiled_partition`` calls write (``32``, ``kTile``, ``C::kWarp``)."""
    return [text for node in walk(root) if node.type == "call_expression" and called_name(node) == "tiled_partition"
            and (text := _tile_size_text(node)) is not None]


def _meta_group_edits(root: ts.Node, tiles: dict[str, int | None], sub_tiles: set[str], ctx: PartContext,
                      file: str, line_base: int) -> list[TextEdit]:
    """``tile.meta_group_rank()/size()`` of a tile cut from the block (``tiles``), counted in the
    part's block. A size known only at instantiation is read from the tile itself
    (``num_threads()``, a compile-time constant of ``thread_block_tile<N>``): the part's thread
    offset is a multiple of 32, so it is a whole number of tiles of any size that divides a
    warp. A tile cut from another tile (``sub_tiles``) counts among its parent's tiles, which
    fusion does not move: it stays as written."""
    edits = []
    for node in walk(root):
        if node.type != "call_expression":
            continue
        fn = node.child_by_field_name("function")
        if fn is None or fn.type != "field_expression":
            continue
        member = fn.child_by_field_name("field")
        if member is None or member.text.decode() not in ("meta_group_rank", "meta_group_size"):
            continue
        target = fn.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and target.text.decode() in sub_tiles:
            continue
        known = target is not None and target.type == "identifier" and target.text.decode() in tiles
        size = tiles.get(target.text.decode()) if known else None
        if not known or (size is not None and 32 % size):
            raise HFuseError(
                f"'{node.text.decode()}' counts tiles of the whole fused block, and hfuse cannot tell which "
                "tile of which block it is asked about",
                Location(file, line_base + line_of(node), ctx.kernel),
                hint="cut the tile with tiled_partition<N>(block) in the same function as the call, "
                "or count tiles from thread_rank()",
            )
        threads = ctx.block_threads or ctx.threads
        if size is None:
            tile = target.text.decode()
            size_text = f"{tile}.num_threads()"
            if member.text.decode() == "meta_group_rank":
                edits.append(TextEdit.replace(node, f"({node.text.decode()} - {ctx.offset}u / {size_text})"))
            else:
                edits.append(TextEdit.replace(node, f"(({threads}u + {size_text} - 1u) / {size_text})"))
        elif member.text.decode() == "meta_group_rank":
            edits.append(TextEdit.replace(node, f"({node.text.decode()} - {ctx.offset // size}u)"))
        else:
            edits.append(TextEdit.replace(node, f"{-(-threads // size)}u"))
    return edits
