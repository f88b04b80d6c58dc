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


class OverlappingEdits(ValueError):
    """Two rewrites claimed overlapping source ranges; ``start`` is the byte where they meet."""

    def __init__(self, start: int):
        self.start = start
        super().__init__(f"overlapping edits at byte {start}")


def apply_edits(data: bytes, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits (byte offsets into ``data``); returns text.

    Identical edits (two rewrites asking for the same change) count once; any other
    overlap raises ``OverlappingEdits``, which callers turn into an error with a location.
    """
    out: list[bytes] = []
    cursor = 0
    for edit in sorted(set(edits), key=lambda e: (e.start, e.end, e.text)):
        if edit.start < cursor:
            raise OverlappingEdits(edit.start)
        out.append(data[cursor : edit.start])
        out.append(edit.text.encode())
        cursor = edit.end
    out.append(data[cursor:])
    return b"".join(out).decode()


def apply_edits_in(data: bytes, start: int, end: int, edits: list[TextEdit]) -> str:
    """``data[start:end]`` as text, with ``edits`` (offsets into ``data``, inside the range) applied."""
    return apply_edits(data[start:end], [TextEdit(e.start - start, e.end - start, e.text) for e in edits])
