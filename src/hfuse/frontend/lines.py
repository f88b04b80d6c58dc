"""From the device pass's tokens to the expanded text's lines, each with the (file, line)
it came from: lines with content, ``_Pragma`` operators made ``#pragma`` lines, and the
blank lines that put every line back at its own number (``preprocess.py``)."""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Iterable, Iterator

ENTER = "HFUSE_ENTER"
"""Type of a token-less marker put where a user header is expanded: the header's lines
go at the ``#include``'s place, after the including file's earlier (blank) lines."""


def content_lines(tokens: Iterable, whitespace: Iterable[str], comments: Iterable[str]
                  ) -> Iterator[tuple[str | None, str, int]]:
    """(text, source, line) of every output line with something on it; text None marks
    the ``#include`` line where a user header's lines go.

    A line's origin is its first non-blank token's; pieces of a multi-line token (a block
    comment) are on the token's following lines. Blank lines are dropped here and made
    again by ``place`` from the origins, so pcpp's own blank-line bookkeeping does not matter.
    """
    parts: list[str] = []
    origin: tuple[str, int] | None = None
    for tok in tokens:
        if tok.type == ENTER:
            if origin is not None:
                yield "".join(parts).rstrip(), origin[0], origin[1]
            parts, origin = [], None
            yield None, tok.source, tok.lineno
            continue
        pieces = tok.value.split("\n") if tok.type in whitespace or tok.type in comments else [tok.value]
        for k, piece in enumerate(pieces):
            if k:
                if origin is not None:
                    yield "".join(parts).rstrip(), origin[0], origin[1]
                parts, origin = [], None
            if piece:
                parts.append(piece)
                if origin is None and piece.strip():
                    origin = (tok.source, tok.lineno + k)
    if origin is not None:
        yield "".join(parts).rstrip(), origin[0], origin[1]


_PRAGMA_OPERATOR = re.compile(r'_Pragma\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)')


def pragma_lines(lines: Iterable[tuple[str | None, str, int]]) -> Iterator[tuple[str | None, str, int]]:
    """``_Pragma("unroll")`` (what ``CUTLASS_PRAGMA_UNROLL`` and its like expand to) as the
    ``#pragma unroll`` line the preprocessor makes of it, on a line of its own with the
    same origin: the parser and every later step see a pragma, as nvcc does."""
    for content, source, line in lines:
        if content is None or "_Pragma" not in content:
            yield content, source, line
            continue
        at = 0
        for match in _PRAGMA_OPERATOR.finditer(content):
            before = content[at:match.start()]
            if before.strip():
                yield before.rstrip(), source, line
            yield "#pragma " + match.group(1).replace('\\"', '"').replace("\\\\", "\\"), source, line
            at = match.end()
        if content[at:].strip():
            yield content[at:].rstrip(), source, line


def place(lines: Iterable[tuple[str | None, str, int]], files: dict[str, Path], default: Path
           ) -> tuple[list[str], list[tuple[Path, int]]]:
    """Each content line at its own line number within its file, blank lines in between.

    Going back to a file (after a header) or forward within one pads up to the line's
    number; a line that comes out earlier (a header read a second time, a macro
    argument spanning lines) is emitted as is, with its true origin.
    """
    text: list[str] = []
    origins: list[tuple[Path, int]] = []
    last: dict[str, int] = {}
    for content, source, line in lines:
        path = files.get(source, default)
        for blank in range(last.get(source, 0) + 1, line):
            text.append("")
            origins.append((path, blank))
        if content is not None:  # None: an #include whose header's lines come next
            text.append(content)
            origins.append((path, line))
        last[source] = line
    return text, origins

def written_include(line_tokens: list, header: str) -> list:
    """The tokens of ``#include <header>`` in place of a computed include's line (its first
    token's origin, its line end kept)."""
    first = copy.copy(line_tokens[0])
    first.value = f"#include {header}"
    return [first, *(t for t in line_tokens[1:] if "\n" in t.value)]
