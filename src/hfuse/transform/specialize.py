"""Turn one kernel (and the helpers it reaches) into a fused part's device code.

The kernel becomes ``<kernel>__hf<i>`` a ``__device__ __forceinline__`` function with
the original parameters plus the part's context; its body is the original text with
only built-ins, barriers, cooperative groups, dynamic shared memory and calls to
specialised helpers rewritten. Each helper that needs the context gets a per-part copy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..frontend.model import Function
from ..frontend.parse import parse, walk
from .analysis import ProgramFacts
from .barriers import barrier_edits
from .builtins import builtin_edits
from .calls import call_edits, signature_edits
from .context import CTX, PartContext
from .cooperative_groups import cooperative_groups_edits
from .early_exit import make_early_exits_safe
from .edits import TextEdit, apply_edits
from .shared_memory import shared_memory_edits


@dataclass(frozen=True)
class PartCode:
    """Device code of one fused part: helper copies (callees first) and the body."""

    helpers: tuple[str, ...]
    body: str
    body_name: str


def _rewrite(text: str, ctx: PartContext, fn: Function, rename_signature: bool) -> str:
    data = text.encode()
    root = parse(data).root_node
    edits: list[TextEdit] = []
    edits += builtin_edits(root, ctx)
    edits += barrier_edits(root, ctx)
    edits += cooperative_groups_edits(root, ctx, str(fn.file), fn.line - 1)
    edits += shared_memory_edits(root, ctx)
    edits += call_edits(root, ctx)
    if rename_signature:
        definition = next(n for n in walk(root) if n.type == "function_definition")
        edits += signature_edits(definition, ctx)
    return apply_edits(data, edits)


def _body_function(kernel: Function, ctx: PartContext, program: ProgramFacts) -> str:
    text = make_early_exits_safe(kernel.text, program.has_barrier, str(kernel.file), kernel.line - 1, kernel.name)
    rewritten = _rewrite(text, ctx, kernel, rename_signature=False)
    root = parse(rewritten.encode()).root_node
    definition = next(n for n in walk(root) if n.type == "function_definition")
    body = definition.child_by_field_name("body").text.decode()
    params = [re.sub(r"\b__grid_constant__\b\s*", "", p.text) for p in kernel.params]
    params = [p for p in params if p.strip() != "void"] + [f"const hfuse_ctx& {CTX}"]
    header = f"{kernel.template_header}\n" if kernel.template_header else ""
    return f"{header}__device__ __forceinline__ void {ctx.clone_name(kernel.name)}({', '.join(params)})\n{body}"


def specialise_part(kernel: Function, ctx: PartContext, program: ProgramFacts, functions: dict[str, list[Function]]) -> PartCode:
    order = _callees_first(kernel.name, program)
    helpers = []
    for name in order:
        if name in ctx.specialised and name != kernel.name:
            for fn in functions[name]:
                # a helper's early return skips its own later barriers just like a kernel's
                text = make_early_exits_safe(fn.text, program.has_barrier, str(fn.file), fn.line - 1, ctx.kernel)
                helpers.append(_rewrite(text, ctx, fn, rename_signature=True))
    return PartCode(tuple(helpers), _body_function(kernel, ctx, program), ctx.clone_name(kernel.name))


def _callees_first(root: str, program: ProgramFacts) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in program.facts:
            return
        order.append(name)  # placeholder against cycles (recursion was refused earlier)
        for f in program.facts[name]:
            for callee in sorted(f.calls):
                visit(callee)
        order.remove(name)
        order.append(name)

    visit(root)
    return order
