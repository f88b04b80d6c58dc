"""Reading the user's files and writing ours, with one-line errors for what goes wrong.

Inputs: text files only (CUDA sources, headers, configs). A file with NUL bytes, one
that is not UTF-8 (but for a CUDA file whose other bytes all sit in comments, read as
Latin-1), or one larger than ``MAX_INPUT_BYTES`` (no hand-written or generated kernel
source comes near it; parsing one would take minutes) is refused naming the file.
Outputs: written to a temporary file beside the target and renamed over it, so a failure
leaves nothing half-written; an unwritable place is an error naming it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from .errors import HFuseError, Location

MAX_INPUT_BYTES = 16 * 1024 * 1024
ENV_VAR = "HFUSE_CACHE_DIR"


def default_cache_dir() -> Path:
    """hfuse's cache (tuned plans, compiled binaries, Clang's precompiled headers):
    ``$HFUSE_CACHE_DIR``, else ``~/.cache/hfuse``."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hfuse"


def read_text_file(path: str | Path, what: str = "source file", where: Location | None = None,
                   legacy: Callable[[str], int | None] | None = None) -> str:
    """The text of ``path`` (a leading BOM dropped), or an ``HFuseError`` saying why not.

    ``legacy``: for a file that is not UTF-8 (an older file written in Latin-1 or
    Windows-1252: an author's name, a degree sign in a comment), a check of its text read
    as Latin-1, byte for character, that gives the offset of the first non-ASCII character
    where it would change the program (outside comments), or None: then that text is
    the file's. Without it, or where the check finds one, the file is refused."""
    path = Path(path)
    named = f"the {what} {path}" if where is not None else f"the {what}"  # a Location of its own names the file
    where = where or Location(path)
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise HFuseError(f"{named} is {size / 1e6:.1f} MB; hfuse reads files of at most "
                             f"{MAX_INPUT_BYTES // (1024 * 1024)} MiB", where,
                             hint="pass the file that holds the kernels, not a generated or binary one")
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise HFuseError(f"{named} is a directory", where) from exc
    except OSError as exc:
        raise HFuseError(f"cannot read {named}: {exc.strerror or exc}", where) from exc
    if b"\0" in data:
        raise HFuseError(f"{named} is binary (it holds NUL bytes), not text", where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start
        if legacy is not None:
            text = data.decode("latin-1")
            found = legacy(text)
            if found is None:
                return text
            offset = found
        line = data.count(b"\n", 0, offset) + 1
        raise HFuseError(f"{named} is not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset}, line {line}"
                         f"{', outside a comment' if legacy is not None else ''})",
                         where, hint="save it as UTF-8") from exc
    return text.removeprefix("\ufeff")


def write_atomically(path: str | Path, data: str | bytes) -> Path:
    """Writes ``data`` to a temporary file beside ``path`` and renames it over ``path``, so
    a concurrent reader sees the old whole file or the new one, never half of one; the
    directory is created if needed, and nothing is left behind on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def append_line(path: str | Path, line: str) -> None:
    """Appends one line to a journal, synced to disk before returning: one ``write`` of
    the whole line in append mode, so lines of processes appending at once never
    interleave, and a kill leaves at most the last line cut short."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line.rstrip("\n") + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def write_output(path: str | Path, data: str | bytes, what: str = "output", inputs: Sequence[Path] = ()) -> Path:
    """``write_atomically`` for a file the user asked for: a place that cannot be written
    (no such directory and none can be made, no permission, a directory in the way) or one
    of the ``inputs`` (the sources and headers the output was made from) is an
    ``HFuseError`` naming it, and nothing is written."""
    path = Path(path)
    if any(path.resolve() == Path(i).resolve() for i in inputs):
        raise HFuseError(f"cannot write the {what} {path}: it is one of the files it was made from (a source or a "
                         "header one includes); hfuse never modifies its inputs", Location(path),
                         hint="give another file name, e.g. -o fused.cu")
    if path.is_dir():
        raise HFuseError(f"cannot write the {what} {path}: it is a directory", Location(path),
                         hint="give a file name, e.g. -o out/fused.cu")
    try:
        return write_atomically(path, data)
    except OSError as exc:
        raise HFuseError(f"cannot write the {what} {path}: {exc.strerror or exc}", Location(path),
                         hint="choose a directory you can write to") from exc


def writable_directory(path: str | Path) -> Path:
    """``path`` as a directory hfuse can write into (made if missing), or an ``HFuseError``."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".hfuse-probe-")
        probe.close()
    except OSError as exc:
        raise HFuseError(f"cannot write into the directory {path}: {exc.strerror or exc}", Location(path),
                         hint="choose a directory you can write to") from exc
    return path
