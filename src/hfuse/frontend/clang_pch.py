"""Clang's precompiled headers: the headers a file keeps, compiled once per set of headers
and arguments into hfuse's cache (``~/.cache/hfuse/clang/``), and the cache kept in bounds.

A PyTorch extension file's headers take Clang 14.6 s to read; from the PCH, 0.5 s
(``docs/front-end-clang.md``, Speed); one PCH of ``torch/extension.h`` serves every such file.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

_log = logging.getLogger(__name__)


NVCC_WARNS = ("initialization is not supported for __shared__ variables",)
"""What Clang's CUDA mode calls an error and nvcc a warning, each a declaration Clang still
reads whole: ``__shared__ cuda::barrier<...> bar;`` (nvcc's warning #20054, the CUDA guide's
own idiom for block barriers)."""


def errors_of(ci, unit) -> list:
    """The diagnostics of a parse that make it unreadable (nvcc rejects them as well)."""
    return [d for d in unit.diagnostics if d.severity >= ci.Diagnostic.Error and d.spelling not in NVCC_WARNS]


@dataclass(frozen=True)
class Preamble:
    """What a parse adds to use the kept headers' PCH (nothing where it could not be built:
    the parse is then only slower), and the first error that kept it from being built."""

    flags: list[str] = field(default_factory=list)
    error: str = ""
    """``file:line: message`` (a header's ``#error`` asking for a later C++, say)."""
    broken: tuple[tuple[str, int], ...] = ()
    """(file, line) of each error in the headers' code the PCH was built with: the functions that
    hold one are unknown, as where the parse reads the headers itself."""


SHARED_BASES = ("torch/extension.h", "torch/torch.h", "torch/all.h", "ATen/ATen.h")
"""Umbrella headers that files keep beside a few headers of each file's own choosing (a
PyTorch extension file: ``torch/extension.h`` and some of ATen's and c10's headers, a different
few in each file). Where a file keeps one, the PCH holds that umbrella alone, shared by every
such file, and the parse reads the file's other kept headers on top of it: 1.4 s instead of
0.6 s with a PCH of the file's exact set, but one 27 s build for all of a library's files
instead of one for each set of headers (``bench/results/cpu/clang_pch_umbrella_parse.json``)."""


def precompiled_lines(preamble: Sequence[str]) -> str:
    """The text of the header precompiled for a file whose kept headers are ``preamble``
    (``SourceFile.kept_preamble``: its ``#include`` lines, each after the user's macros it is
    read with), empty where there is nothing to precompile: its ``#include <...>`` lines, or the
    first shared umbrella among them alone, with the user's ``#define``s and ``#undef``s before
    them, and those macros undefined at the end, where the user's text defines them itself
    (an include guard the PCH left defined would hide the file)."""
    lines = [line for line in preamble if _directive(line) in ("define", "undef")
             or _directive(line) == "include" and "<" in line]
    umbrella = next((at for base in SHARED_BASES for at, line in enumerate(lines)
                     if _directive(line) == "include" and _header(line) == base), None)
    if umbrella is not None:
        lines = [line for line in lines[:umbrella] if _directive(line) != "include"] + [lines[umbrella]]
    if not any(_directive(line) == "include" for line in lines):
        return ""
    defined = dict.fromkeys(line.split()[1].split("(")[0] for line in lines if _directive(line) == "define")
    return "".join(f"{line}\n" for line in [*lines, *(f"#undef {name}" for name in defined)])


def _directive(line: str) -> str:
    """``include`` of ``#include <x>`` (``# include`` too); empty for a line that is no directive."""
    found = re.match(r"\s*#\s*(\w+)", line)
    return found.group(1) if found else ""


def _header(line: str) -> str:
    return line.split("<", 1)[1].split(">", 1)[0].strip()


def precompiled_preamble(ci, arguments: list[str], kept_preamble: Sequence[str], cache: Path) -> Preamble:
    """``-include-pch`` of the kept headers (``precompiled_lines``), built once per set of
    headers, macros and arguments."""
    text = precompiled_lines(kept_preamble)
    if not text:
        return Preamble()  # nothing to precompile: the parse reads only the user's text
    library = Path(ci.conf.lib._name)
    built = library.stat() if library.is_file() else None
    version = f"{library}:{built.st_size}:{built.st_mtime_ns}" if built else str(library)
    build = [*arguments, "-Xclang", "-fpch-instantiate-templates"]
    key = hashlib.sha256("\0".join([version, _PCH_FORMAT, *build, text]).encode()).hexdigest()[:32]
    target = cache / "clang" / f"{key}.pch"
    if target.is_file() and _inputs_unchanged(target):
        _touch(target)
        return _loaded(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # the header stays beside its PCH: Clang checks, when loading one, that its inputs exist
        header = target.with_suffix(".cuh")
        if not header.is_file():
            # created once and never replaced (its name is its text's hash): a PCH another
            # process built from it records its time, and a newer file would invalidate that
            with tempfile.NamedTemporaryFile("w", dir=target.parent, suffix=".tmp", delete=False) as out:
                out.write(text)
            try:
                os.link(out.name, header)
            except FileExistsError:
                pass
            finally:
                os.unlink(out.name)
        # the headers' pending template instantiations done once here, not in every parse that
        # loads the PCH: a complete unit (not PARSE_INCOMPLETE, which leaves them pending) and
        # -fpch-instantiate-templates (PyTorch's headers: 5 s per parse without either, 1.7 s
        # with the flag alone, 0.5 s with both)
        names = ", ".join(_header(line) for line in text.splitlines() if _directive(line) == "include")
        _log.info(f"Clang: precompiling the kept headers ({names}) once for these options; "
                  f"the cache keeps them in {target.parent}")
        unit = ci.Index.create().parse(str(header), args=build)
        errors = errors_of(ci, unit)
        # a fatal error (a header not found) ends the parse where it is, and one in the preamble's own lines
        # is no header's: the headers are unread, and the file's parse reads them itself
        fatal = [d for d in errors if d.severity >= ci.Diagnostic.Fatal or d.location.file is None
                 or Path(d.location.file.name) == header]
        if fatal:
            first = fatal[0]
            return Preamble(error=f"{first.location.file or '?'}:{first.location.line}: {first.spelling}")
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        unit.save(str(partial))
        # errors in the headers' own code (cuDNN frontend's JSON conversions, which nvcc takes and Clang's
        # CUDA mode does not): the PCH is kept, with where they are, whose functions stay unknown
        if errors:
            broken = target.with_suffix(f".{os.getpid()}.errors.tmp")
            broken.write_text("".join(f"{d.location.line}\t{d.location.file.name}\t{d.spelling}\n" for d in errors))
            os.replace(broken, target.with_suffix(".errors"))
        else:
            target.with_suffix(".errors").unlink(missing_ok=True)  # (a header since mended)
        inputs = target.with_suffix(f".{os.getpid()}.inputs.tmp")
        inputs.write_text(_fingerprint(sorted({str(i.include.name) for i in unit.get_includes()})))
        os.replace(partial, target)  # atomic: a concurrent request reads the old or the new, whole
        os.replace(inputs, target.with_suffix(".inputs"))
        prune_precompiled(target.parent, keep=target)
    except Exception:  # a read-only cache or a full disk: parse without it
        return Preamble()
    return _loaded(target)


def _loaded(target: Path) -> Preamble:
    """The preamble of the PCH ``target``, with the errors its headers held (its ``.errors``)."""
    try:
        rows = [row.split("\t", 2) for row in target.with_suffix(".errors").read_text().splitlines()]
    except OSError:
        rows = []
    rows = [row for row in rows if len(row) == 3]
    error = f"{rows[0][1]}:{rows[0][0]}: {rows[0][2]}" if rows else ""
    return Preamble(["-include-pch", str(target)], error=error, broken=tuple((file, int(line)) for line, file, _ in rows))


def _fingerprint(paths: Sequence[str]) -> str:
    """Each file's size, time and path, a line each (a file gone: -1 -1)."""
    lines = []
    for path in paths:
        try:
            found = os.stat(path)
            lines.append(f"{found.st_size} {found.st_mtime_ns} {path}")
        except OSError:
            lines.append(f"-1 -1 {path}")
    return "".join(f"{line}\n" for line in lines)


def _inputs_unchanged(target: Path) -> bool:
    """Whether every header the PCH read is as it was then: a header edited or a package
    upgraded since makes Clang refuse the PCH, so it is built again."""
    try:
        recorded = target.with_suffix(".inputs").read_text()
    except OSError:
        return False
    paths = [line.split(" ", 2)[2] for line in recorded.splitlines() if line.count(" ") >= 2]
    return _fingerprint(paths) == recorded


_PCH_FORMAT = "complete-unit, inputs, non-fatal errors"
"""How a PCH is built, in its key: a change makes new ones, never loads an old kind."""
PCH_CACHE_BYTES = 2 << 30
"""The precompiled headers kept at most (a PyTorch extension's is 200 MB, CUDA's alone 50 MB):
the least recently used go first."""
_PCH_IN_USE_SECONDS = 600
"""A PCH used this recently is never removed: another request may be loading it."""


def _touch(path: Path) -> None:
    try:
        os.utime(path)  # its time says when it was last used, for prune_precompiled
    except OSError:
        pass


def prune_precompiled(folder: Path, keep: Path | None = None, budget: int = PCH_CACHE_BYTES) -> list[Path]:
    """Removes the least recently used PCHs of ``folder`` (and the headers beside them) until
    the rest fit in ``budget`` bytes; never ``keep`` nor one used in the last minutes.
    Returns what it removed."""
    entries = []
    for pch in folder.glob("*.pch"):
        try:
            found = pch.stat()
        except OSError:
            continue
        entries.append((found.st_mtime, found.st_size, pch))
    total = sum(size for _, size, _ in entries)
    removed, now = [], time.time()
    for used, size, pch in sorted(entries):
        if total <= budget:
            break
        if pch == keep or now - used < _PCH_IN_USE_SECONDS:
            continue
        for path in (pch, pch.with_suffix(".cuh"), pch.with_suffix(".inputs"), pch.with_suffix(".errors")):
            try:
                path.unlink()
            except OSError:
                pass
        total -= size
        removed.append(pch)
    return removed
