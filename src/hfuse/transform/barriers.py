"""BarrierRewrite: block barriers become named barriers over the part's threads only.

``__syncthreads()`` waits for the whole (fused) block, so it would couple the parts.
Each part gets its own barrier id and thread count (``hfuse_sync<ID, N>()``, defined in
the preamble with ``barrier.sync``/``barrier.red``).
"""
from __future__ import annotations

from ..frontend.parse import walk
from .cuda_syntax import called_name, is_cg_sync_call
from .context import PartContext
from .definition import Definition
from .edits import TextEdit

_REPLACEMENT = {
    "__syncthreads": "hfuse_sync",
    "__syncthreads_count": "hfuse_sync_count",
    "__syncthreads_and": "hfuse_sync_and",
    "__syncthreads_or": "hfuse_sync_or",
}


def barrier_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    cg = definition.cg_spellings(ctx.resolver)
    edits: list[TextEdit] = []
    for node in walk(definition.root):
        if node.type != "call_expression":
            continue
        name = called_name(node)
        fn = node.child_by_field_name("function")
        if name in _REPLACEMENT:
            assert ctx.barrier_id is not None, "a part with barriers has a barrier id"
            edits.append(TextEdit.replace(fn, f"{_REPLACEMENT[name]}<{ctx.barrier_args}>"))
        elif is_cg_sync_call(node, cg) and fn.type == "qualified_identifier":  # (``sync(g)`` calls g.sync() as it is)
            edits.append(TextEdit.replace(fn, "hfuse_group_sync"))
    return edits
