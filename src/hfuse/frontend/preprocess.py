"""Macro expansion that keeps the file's shape.

Kernel bodies may use macros (a grid-stride-loop macro, say); tree-sitter parses the
text as written, so unexpanded macros would be misparsed without any error. We expand
them with pcpp, a real C preprocessor, in pass-through mode: ``#include`` lines, ``#if``
on macros we do not know (``__CUDA_ARCH__``), ``#pragma`` and comments stay as they are,
and every line keeps its number, so errors point at the user's own lines.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import pcpp

from ..errors import HFuseError, Location


class _PassThroughPreprocessor(pcpp.Preprocessor):
    def __init__(self) -> None:
        super().__init__()
        self.line_directive = None  # no "#line" noise: line numbers are preserved anyway
        self.compress = 0
        self.passthru_includes = re.compile(".*")
        self.errors: list[str] = []

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        raise pcpp.OutputDirective(pcpp.Action.IgnoreAndPassThrough)

    def on_unknown_macro_in_defined_expr(self, tok):
        return None  # keep the #if for the real compiler

    def on_unknown_macro_in_expr(self, ident):
        return None

    def on_unknown_macro_function_in_expr(self, ident):
        return None

    def on_comment(self, tok):
        return True

    def on_error(self, file, line, msg):
        self.errors.append(f"{file}:{line}: {msg}")


def preprocess(text: str, path: str | Path) -> str:
    """Expand the file's own macros; everything else passes through, line for line."""
    pp = _PassThroughPreprocessor()
    pp.parse(text, str(path))
    out = io.StringIO()
    pp.write(out)
    if pp.errors:
        first = pp.errors[0]
        line = re.match(r".*?:(\d+):", first)
        raise HFuseError(
            f"preprocessing failed: {first}",
            Location(path, int(line.group(1)) if line else None),
        )
    expanded = out.getvalue()
    # pcpp drops a trailing newline and may differ by blank lines at the end only.
    return expanded
