"""What nvcc accepts and Clang does not: the texts Clang reads (the user's and kept
headers'), amended so that Clang reads them as nvcc compiles them.

nvcc's front end (EDG) accepts a member template of a dependent type called without
``template``: ``vec_cast<T, S>::cast<N>(dst, src)`` (FlashInfer's vector casts, in every
kernel that loads or stores through them). Clang reads ``cast < N`` as a comparison and,
in the instance, reports "reference to overloaded function could not be resolved" (or, where
it knew the name for a template, "missing 'template' keyword"); until mended, the instances
of every kernel reaching it go unread and hfuse refuses them. There ``template`` is written
before the name in the text Clang reads. Never in what hfuse emits:
nvcc takes the user's text as it is. Lines do not move, so every line Clang reports is the
user's."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

OVERLOADED = "reference to overloaded function could not be resolved"
"""Clang's error where a dependent member template was called without ``template`` and read
as comparisons (its range ends with the name; a note offers the template as the target)."""
_TARGET = "possible target for call"
MISSING = re.compile(r"missing 'template' keyword prior to dependent template name '(\w+)'")
"""Clang's error where it knew the name for a template (at the qualified name's start)."""
_MEMBER_TEMPLATE_CALL = re.compile(r"::\s*(?!template\b)([A-Za-z_]\w*)\s*<")
KEYWORD = "template "


def with_template_keywords(diagnostics, texts: Mapping[str, str]) -> dict[str, str]:
    """The texts (by path; read from disk where ``texts`` has none) with ``template`` written
    where ``diagnostics`` (of one parse) report a dependent member template called without
    it; only the files amended."""
    places: dict[str, set[tuple[int, int]]] = {}
    known = dict(texts)

    def line_of(location) -> str | None:
        if location.file is None:
            return None
        path = location.file.name
        if path not in known:
            known[path] = Path(path).read_text(errors="replace")
        lines = known[path].splitlines(keepends=True)
        return lines[location.line - 1] if location.line <= len(lines) else None

    for d in diagnostics:
        if (missing := MISSING.search(d.spelling)) is not None and (line := line_of(d.location)) is not None:
            # the first ``::name<`` from the qualified name's start
            found = [m for m in _MEMBER_TEMPLATE_CALL.finditer(line, max(d.location.column - 1, 0))
                     if m.group(1) == missing.group(1)][:1]
            where = d.location
        elif OVERLOADED in d.spelling and any(_TARGET in c.spelling for c in d.children):
            # the range ends with the name: the last ``::name<`` inside it
            spans = [r for r in d.ranges if r.start.line == r.end.line and line_of(r.start) is not None]
            if not spans:
                continue
            where, end = spans[0].start, spans[0].end.column - 1
            found = [m for m in _MEMBER_TEMPLATE_CALL.finditer(line_of(where), max(where.column - 1, 0))
                     if m.end(1) <= end][-1:]
        else:
            continue
        if found:
            places.setdefault(where.file.name, set()).add((where.line, found[0].start(1)))
    amended = {}
    for path, at in places.items():
        lines = known[path].splitlines(keepends=True)
        for number, column in sorted(at, reverse=True):
            line = lines[number - 1]
            lines[number - 1] = line[:column] + KEYWORD + line[column:]
        amended[path] = "".join(lines)
    return amended
