"""CooperativeGroupsRewrite: a part's ``thread_block`` is its own slice of the fused block.

``this_thread_block()`` would describe the fused block; it becomes
``hfuse_thread_block<ID, N>``, a small type with the same methods (sync, thread_rank,
size, thread_index, group_index, dim_threads) over the part's threads. Warp tiles cut
from a block stay as they are (parts are warp aligned, so a tile of at most 32 threads
is the same warp either way).
"""
from __future__ import annotations

import tree_sitter as ts

from ..errors import HFuseError, Location
from ..frontend.parse import line_of, walk
from .analysis import CG_NAMESPACES, called_name, cg_block_variables, is_cg_block_call, is_cg_block_type
from .context import CTX, PartContext
from .edits import TextEdit

_REAL_BLOCK = "cooperative_groups::this_thread_block()"


def cooperative_groups_edits(
    root: ts.Node, ctx: PartContext, file: str, line_base: int, cg: frozenset[str] = CG_NAMESPACES
) -> list[TextEdit]:
    edits: list[TextEdit] = []
    block_type = f"hfuse_thread_block<{ctx.barrier_args}>"
    block_vars = cg_block_variables(root, cg)
    for node in walk(root):
        if is_cg_block_call(node):
            # a block passed straight to tiled_partition stays the real block (see _tile_edits)
            if not _is_tile_parent(node):
                edits.append(TextEdit.replace(node, f"{block_type}({CTX})"))
        elif is_cg_block_type(node, cg):
            edits.append(TextEdit.replace(node, block_type))
        elif node.type == "call_expression" and called_name(node) == "tiled_partition":
            edits.extend(_tile_edits(node, block_vars, ctx, file, line_base))
    return edits


def _tile_edits(call: ts.Node, block_vars: set[str], ctx: PartContext, file: str, line_base: int) -> list[TextEdit]:
    sizes = []
    fn = call.child_by_field_name("function")
    while fn is not None and fn.type == "qualified_identifier":
        fn = fn.child_by_field_name("name")
    if fn is not None and fn.type == "template_function":
        sizes = [a.text.decode() for a in fn.child_by_field_name("arguments").named_children]
    args = call.child_by_field_name("arguments").named_children
    sizes += [a.text.decode() for a in args[1:2]]
    parents = [a for a in args[:1] if (a.type == "identifier" and a.text.decode() in block_vars) or is_cg_block_call(a)]
    if not parents:
        return []
    if not sizes or not sizes[0].rstrip("uU").isdigit() or int(sizes[0].rstrip("uU")) > 32:
        raise HFuseError(
            f"tiled_partition of a thread block into tiles of {sizes[0] if sizes else 'unknown size'} threads: "
            "only warp-sized or smaller tiles (a literal <= 32) can be kept when fused",
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
