"""Clang's reading of a request's files (``frontend/clang.py``): one parse per file, with that
file's options and its kernel template instances named for Clang to instantiate
(``frontend/instances.py``), and what the request must say of it: a header asking for
a later C++ standard is an error; a file Clang could not read is a note, and the files
whose kept headers nobody checked then (``transform/header_reads.add_unchecked_calls``)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from .errors import HFuseError, Location
from .frontend.clang import Meaning, read_meaning
from .frontend.instances import instance_reference
from .frontend.model import Function, SourceFile
from .frontend.options import CompileOptions
from .spec import KernelSpec


def header_meaning(specs: Sequence[KernelSpec], kernels: Sequence[Function], files: Sequence[SourceFile],
                    sources: Mapping[str | Path, str] | None,
                    options: CompileOptions) -> tuple[Meaning, tuple[str, ...], dict[Path, str]]:
    """Clang's reading of what each file's functions reach in the headers hfuse keeps (one
    parse per file, with that file's options), a note for each file it could not read, and
    those files (with the user's headers they read) that keep headers nobody checked, and why."""
    given = {str(k): v for k, v in (sources or {}).items()}
    found, notes, unread = [], [], {}
    for source in files:
        spec = next(s for s in specs if s.file == source.path)
        references = [instance_reference(k, s.template_args, i) for i, (s, k) in enumerate(zip(specs, kernels))
                      if s.file == source.path]
        meaning = read_meaning([source.path], spec.options or options, user_files=source.headers,
                               kept_includes=source.kept_includes, sources=given, instances=[r for r in references if r])
        if meaning.dialect is not None:
            used = (spec.options or options).std
            raise HFuseError(
                f"a header this file keeps requires {meaning.dialect.replace('c', 'C', 1)} ({meaning.dialect_where}); "
                f"hfuse reads the file as -std={used}, as nvcc would", Location(source.path),
                hint=f"pass -std {meaning.dialect} (or std: {meaning.dialect} under compile: in a config), as your "
                "build does: nvcc stops at the same #error without it (PyTorch's extension build passes -std=c++20)")
        if meaning.instances_unread is not None:
            notes.append(f"note: Clang could not instantiate the kernel templates of {source.path.name} as asked "
                         f"({meaning.instances_unread}); it read them as templates, where a call "
                         "through a type that depends on a template parameter names no code")
        if meaning.unavailable is not None:
            notes.append(f"note: {meaning.unavailable}; hfuse checked the headers it keeps by the names alone")
            unread.update({path: meaning.unavailable for path in (source.path, *source.headers)})
        found.extend(meaning.functions)
    return Meaning(tuple(found)), tuple(notes), unread
