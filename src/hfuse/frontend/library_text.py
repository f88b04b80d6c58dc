"""Which of the user's macros an installed library's headers mention.

A file that writes ``#define MYLIB_DOUBLE_IT 1`` above ``#include <mylib/ops.cuh>`` (a header
of a library hfuse keeps as an ``#include``) may configure that header: its ``#ifdef
MYLIB_DOUBLE_IT`` picks other code. The fused file includes the header once, so it must
define the macro above it as the file did (``codegen/header_configuration.py``); once it
did not, and the fused kernel silently ran the header's other branch. Whether a header
consults a name is not known without reading it: the headers the includes reach in the
library folders are read here (their text, following their own ``#include`` lines) for the
names, a mention in a comment counting too (the safe way round).
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Iterable, Iterator, Sequence

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def library_mentions(names: Iterable[str], includes: Sequence[str], library_dirs: Sequence[Path]) -> frozenset[str]:
    """Those of ``names`` that a header of ``library_dirs`` reached from the ``#include``
    lines ``includes`` mentions (headers outside those folders, the toolkit's and the
    system's, are not read: their own configuration macros have names of their own forms).
    PyTorch's headers, read whole: 2.4 s, once per process for the same question."""
    return _mentions(frozenset(names), tuple(includes), tuple(Path(d) for d in library_dirs))


@functools.lru_cache(maxsize=64)
def _mentions(wanted: frozenset[str], includes: tuple[str, ...], library_dirs: tuple[Path, ...]) -> frozenset[str]:
    if not wanted or not library_dirs:
        return frozenset()
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(wanted)) + r")\b")
    found: set[str] = set()
    for _, text in _reached(includes, library_dirs):
        found.update(m.group(1) for m in pattern.finditer(text))
        if found == wanted:
            break
    return frozenset(found)


def kernel_definition(name: str, includes: Sequence[str], library_dirs: Sequence[Path]) -> tuple[Path, int] | None:
    """The header of ``library_dirs`` reached from ``includes`` that defines a ``__global__``
    named ``name`` (its last component), and the line of that name: where a kernel a request
    asks for lives when the file it names has none (FlashInfer's, in its ``-isystem`` headers)."""
    plain = name.split("<")[0].split("::")[-1].strip()
    pattern = re.compile(r"__global__[^;{}]*?\b(" + re.escape(plain) + r")\s*\(")
    for path, text in _reached(tuple(includes), tuple(Path(d) for d in library_dirs)):
        if (match := pattern.search(text)) is not None:
            return path, text.count("\n", 0, match.start(1)) + 1
    return None


def _reached(includes: tuple[str, ...], library_dirs: tuple[Path, ...]) -> Iterator[tuple[Path, str]]:
    """(path, text) of each header of ``library_dirs`` the ``#include`` lines ``includes``
    reach, following the headers' own includes within those folders."""
    folders = [Path(d).resolve() for d in library_dirs]
    todo: list[tuple[str, Path | None]] = [(m.group(2), None) for line in includes if (m := _INCLUDE.match(line))]
    seen: set[Path] = set()
    while todo:
        name, here = todo.pop()
        path = next((folder / name for folder in ([here] if here else []) + folders if (folder / name).is_file()),
                    None)
        if path is None:
            continue
        path = path.resolve()
        if path in seen or not any(path.is_relative_to(folder) for folder in folders):
            continue
        seen.add(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        yield path, text
        todo.extend((m.group(2), path.parent if m.group(1) == '"' else None) for m in _INCLUDE.finditer(text))
