"""Byte-range text edits, the currency of every rewrite."""
from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts


@dataclass(frozen=True)
class TextEdit:
    start: int
    end: int
    text: str

    @classmethod
    def replace(cls, node: ts.Node, text: str) -> "TextEdit":
        return cls(node.start_byte, node.end_byte, text)


def apply_edits(data: bytes, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits (byte offsets into ``data``); returns text."""
    out: list[bytes] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor:
            raise ValueError(f"overlapping edits at byte {edit.start}")
        out.append(data[cursor : edit.start])
        out.append(edit.text.encode())
        cursor = edit.end
    out.append(data[cursor:])
    return b"".join(out).decode()
