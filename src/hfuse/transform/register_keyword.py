"""RegisterKeywordRewrite: ``register`` is dropped from emitted code.

Old benchmark kernels declare ``register float sum = 0;``. C++17 removed the storage
class (nvcc then needs ``-std=c++14``), but under NVRTC the fused file includes libcu++
stand-ins for the C++ headers (``codegen/includes.py``), which need C++17. The keyword
has meant nothing to CUDA compilers for a long time, so removing it changes no code and
lets every emitted file compile as C++17.
"""
from __future__ import annotations

from ..frontend.parse import walk
from .context import PartContext
from .definition import Definition
from .edits import TextEdit, apply_edits


def register_edits(definition: Definition, ctx: PartContext | None = None) -> list[TextEdit]:
    edits = []
    for node in walk(definition.root):
        if node.type == "storage_class_specifier" and node.text.decode() == "register":
            end = node.end_byte
            data = definition.data  # the whole text, to swallow the space after the keyword
            while end < len(data) and data[end : end + 1] in (b" ", b"\t"):
                end += 1
            edits.append(TextEdit(node.start_byte, end, ""))
    return edits


def without_register(text: str) -> str:
    """``text`` (any definition) without ``register`` storage classes."""
    if "register" not in text:
        return text
    definition = Definition(text)
    return apply_edits(definition.data, register_edits(definition))
