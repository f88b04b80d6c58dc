"""BuiltinRewrite: ``threadIdx``/``blockDim``/``blockIdx``/``gridDim`` read the part's own.

Inside a fused kernel the hardware built-ins describe the fused block; each part reads
the values its original kernel would have seen from the hidden context instead.
"""
from __future__ import annotations

from ..frontend.parse import walk
from .cuda_syntax import is_builtin_reference
from .context import CTX, PartContext
from .definition import Definition
from .edits import TextEdit


def builtin_edits(definition: Definition, ctx: PartContext) -> list[TextEdit]:
    return [TextEdit.replace(n, f"{CTX}.{n.text.decode()}") for n in walk(definition.root) if is_builtin_reference(n)]
