"""LambdaCaptureRewrite: a lambda that reads the block captures the part's context.

A lambda without a default capture (``[]``, ``[a, &b]``) that reads ``threadIdx`` compiles
as written: the built-ins are globals. In a part, the other rewrites turn such reads into
``hf_ctx.threadIdx`` (and calls of helpers copied per part into ``helper__hf1(hf_ctx,
...)``), a parameter of the enclosing function the lambda does not capture, and nvcc
refuses the file. So such a lambda also captures the context by reference: ``[&hf_ctx]``,
``[a, &b, &hf_ctx]``. A lambda with a default capture (``[&]``, ``[=]``) has it already.
"""
from __future__ import annotations

import tree_sitter as ts

from ..frontend.parse import declarator_name, walk
from .cuda_syntax import BUILTINS, is_cg_block_call, is_extern_shared_declaration
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit


def lambda_capture_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    if not _defines_a_function(definition.root):
        return []  # a type's member functions reach the context otherwise (context_types.py)
    # an extern __shared__ array of the function becomes a local reference to the part's slice
    # (an array of unknown bound: captured by reference, as a copy it would be copied)
    local_dynamic = {name.text.decode() for node in walk(definition.root) if is_extern_shared_declaration(node)
                     for d in node.children_by_field_name("declarator") if (name := declarator_name(d)) is not None}
    edits = []
    for node in walk(definition.root):
        if node.type != "lambda_expression":
            continue
        captures = node.child_by_field_name("captures")
        if captures is None or any(c.type == "lambda_default_capture" for c in captures.children):
            continue
        listed = {c.text.decode() for c in captures.children if c.type == "identifier"}
        wanted = [f"&{CTX}"] if CTX not in listed and _reads_the_context(node, ctx) else []
        wanted += sorted(f"&{n}" for n in _names(node) & local_dynamic if n not in listed)
        if not wanted:
            continue
        written = [c for c in captures.named_children if c.type != "comment"] or \
            [c for c in captures.children if c.type == "this"]
        close = captures.end_byte - 1  # the ']'
        edits.append(TextEdit(close, close, (", " if written else "") + ", ".join(wanted)))
    return edits


def _defines_a_function(node: ts.Node) -> bool:
    """A function or a function template (a kernel template's part is one), not a type."""
    return any(n.type == "function_definition" or n.type == "template_declaration" and _defines_a_function(n)
               for n in node.children)


def _names(node: ts.Node) -> set[str]:
    return {n.text.decode() for n in walk(node) if n.type == "identifier"}


def _reads_the_context(lambda_node: ts.Node, ctx: PartContext) -> bool:
    """Whether the rewrites will make the lambda's body name the context: a built-in, the
    block of cooperative groups, a file-scope ``extern __shared__`` array, or a helper
    copied per part."""
    if _names(lambda_node) & {*BUILTINS, *(key.split("::")[-1] for key in ctx.specialised),
                              *(name for name, _ in ctx.extern_shared)}:
        return True
    return any(n.type == "call_expression" and is_cg_block_call(n) for n in walk(lambda_node))
