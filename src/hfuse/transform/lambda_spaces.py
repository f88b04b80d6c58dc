"""LambdaSpaceRewrite: a lambda's execution-space annotation in device code becomes a comment.

``[] __device__ (int i) { ... }`` inside a ``__device__`` or ``__global__`` function needs
nvcc's ``--extended-lambda``, and NVRTC (13.0) has no such flag: a fused file holding one
could not be tuned. Inside device code the annotation says nothing a plain lambda does
not: a lambda's call operator takes the execution space of the function it is written in
(a ``__host__ __device__`` function's lambdas are both). So hfuse keeps the annotation as
a comment, ``[] /*__device__*/ (int i)``, and the file compiles under nvcc without the flag
and under NVRTC. Everything hfuse emits from the user's code is device code (host
functions are left out), so every lambda in it is rewritten this way.
"""
from __future__ import annotations

import re

from ..frontend.parse import parse, walk
from .context import PartContext
from .definition import Definition
from .edits import TextEdit, apply_edits

_SPACE = re.compile(rb"\b__(?:host|device)__\b")


def lambda_space_edits(definition: Definition, ctx: PartContext | None = None) -> list[TextEdit]:
    return _edits(definition.data, definition.root)


def without_lambda_spaces(text: str) -> str:
    """``text`` (a definition hfuse emits as the user wrote it) with its lambdas' annotations
    turned into comments."""
    data = text.encode()
    if b"__device__" not in data and b"__host__" not in data or b"[" not in data:
        return text
    return apply_edits(data, _edits(data, parse(data).root_node))


def _edits(data: bytes, root) -> list[TextEdit]:
    edits = []
    for node in walk(root):
        if node.type != "lambda_expression":
            continue
        captures = node.child_by_field_name("captures")
        after = [c for c in node.children if c.start_byte >= captures.end_byte] if captures is not None else []
        if not after:
            continue
        # the grammar skips the annotation: it lies between the captures and what follows them
        start, end = captures.end_byte, after[0].start_byte
        for found in _SPACE.finditer(data, start, end):
            word = found.group(0).decode()
            edits.append(TextEdit(found.start(), found.end(), f"/*{word}*/"))
    return edits
