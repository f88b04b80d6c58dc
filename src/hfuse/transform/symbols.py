"""SymbolRewrite: a ``__constant__``/``__device__`` symbol that two inputs both define, or
a type, typedef or constant two inputs define differently, becomes one per part.

Compiled apart, ``a.cu`` and ``b.cu`` that both define ``__constant__ float coeffs[16]``
have two tables, each filled by its own ``cudaMemcpyToSymbol``. Fused into one file they
would share one, and one kernel would read the other's data. So part ``i`` gets
``coeffs__hf<i>`` (its own file's definition, renamed), every reference in its code is
renamed, and ``FusedKernel.symbol_names`` tells the launcher where each part's data goes.
Helpers that read such a symbol are copied per part (like helpers that read built-ins),
so each copy reads its own part's table. A type (``struct Mix``, ``typedef``, ``using``)
or constant defined differently is the same: each file's code meant its own, so part
``i`` gets ``Mix__hf<i>``, and its code and its kernel's parameters name that.
"""
from __future__ import annotations

from ..frontend.parse import compact, walk
from .context import PartContext
from .definition import Definition
from .edits import TextEdit


_QUALIFIED = ("qualified_identifier", "qualified_type")


def symbol_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    if not ctx.symbols:
        return []
    plain = {key.split("::")[-1] for key in ctx.symbols}
    scope, local = definition.scope, definition.local
    edits = []
    for node in walk(definition.root):
        if node.type not in ("identifier", "type_identifier", "namespace_identifier") \
                or node.text.decode() not in plain:
            continue
        parent = node.parent
        written = node.text.decode()
        if parent is not None and parent.type in _QUALIFIED and parent.child_by_field_name("scope") == node:
            # a type named as the scope of a member (``Cfg::tile``): what the qualification up to it names
            outer = parent
            while outer.parent is not None and outer.parent.type in _QUALIFIED \
                    and outer.parent.child_by_field_name("name") == outer:
                outer = outer.parent
            written = compact(outer.text[: node.end_byte - outer.start_byte].decode())
        elif parent is not None and parent.type == "qualified_identifier":
            if parent.child_by_field_name("name") != node:
                continue
            written = compact(parent.text.decode())
        key = ctx.resolver.resolve(scope, written, local)
        if key in ctx.symbols:
            edits.append(TextEdit.replace(node, ctx.clone_name(node.text.decode())))
    return edits
