"""A build's ``compile_commands.json`` (CMake's ``CMAKE_EXPORT_COMPILE_COMMANDS``, Bear, a
ninja build's ``-t compdb``): each input file is read with the flags its own build compiles
it with, and the fused file is compiled with what they share (``CompileOptions.shared``)."""
from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import HFuseError, Location
from ..frontend.options import CompileOptions
from ..spec import FileOptions, KernelSpec, with_file_options
from .flags import add_compile_flags, joined_nvcc_values, options_from_flags

LAUNCHERS = frozenset({"ccache", "sccache", "distcc", "icecc", "buildcache"})
"""Programs a build puts before the compiler (``ccache nvcc ...``)."""


@dataclass(frozen=True)
class BuildCommand:
    """One entry: the flags that compile ``file`` (no compiler, ``-c``, ``-o`` or the file
    itself), and the folder they are relative to."""

    file: Path
    flags: tuple[str, ...]
    directory: Path


@dataclass(frozen=True)
class BuildCommands:
    """The entries of a compile database, by the real path of the file each compiles."""

    path: Path
    entries: dict[Path, BuildCommand]

    @classmethod
    def load(cls, given: str | Path) -> "BuildCommands":
        """``given``: the database, or a build folder that holds ``compile_commands.json``."""
        path = Path(given)
        if path.is_dir():
            path = path / "compile_commands.json"
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise HFuseError(f"cannot read the compile database: {exc.strerror or exc}", Location(path),
                             hint="give the compile_commands.json your build wrote (CMake: "
                             "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON), or the build folder that holds it") from None
        except json.JSONDecodeError as exc:
            raise HFuseError(f"the compile database is not JSON: {exc.msg}", Location(path, exc.lineno)) from None
        if not isinstance(data, list):
            raise HFuseError("the compile database must be a JSON list of entries", Location(path))
        entries: dict[Path, BuildCommand] = {}
        for index, entry in enumerate(data):
            command = _entry(entry, index, path)
            entries.setdefault(command.file, command)  # (the first, as clang tools take it)
        return cls(path, entries)

    def file_options(self, args: argparse.Namespace, files: Sequence[Path] | None = None) -> tuple[FileOptions, ...]:
        """The options the build gives each of ``files`` it has (every file of the database
        where None), the command line's flags on top."""
        wanted = self.entries if files is None else [Path(f).resolve() for f in files if Path(f).resolve() in self.entries]
        return tuple(FileOptions(file, *self.options_for(file, args)) for file in dict.fromkeys(wanted))

    def options_for(self, file: Path, args: argparse.Namespace) -> tuple[CompileOptions, tuple[str, ...]]:
        """The options ``file``'s build gives it (an entry of the database), with the command
        line's flags on top, and notes on what was left out."""
        command = self.entries[Path(file).resolve()]
        parser = argparse.ArgumentParser(add_help=False)
        add_compile_flags(parser, arch=True)
        parsed, unknown = parser.parse_known_args(joined_nvcc_values(list(command.flags)))
        own = options_from_flags(parsed).resolved(command.directory)
        notes = (f"note: flags of {file.name}'s build command that hfuse does not know, left out: {' '.join(unknown)}",
                 ) if unknown else ()
        return options_from_flags(args, own), notes


def _entry(entry: object, index: int, path: Path) -> BuildCommand:
    where = Location(path, None, f"entry #{index}")
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) \
            or not isinstance(entry.get("directory", ""), str):
        raise HFuseError(f"entry #{index} needs 'file' and 'directory' strings", where)
    directory = Path(entry.get("directory") or path.parent)
    if isinstance(entry.get("arguments"), list) and all(isinstance(a, str) for a in entry["arguments"]):
        argv = list(entry["arguments"])
    elif isinstance(entry.get("command"), str):
        argv = shlex.split(entry["command"])
    else:
        raise HFuseError(f"entry #{index} needs 'arguments' (a list of strings) or 'command' (a string)", where)
    file = Path(entry["file"]) if Path(entry["file"]).is_absolute() else directory / entry["file"]
    return BuildCommand(file.resolve(), tuple(_flags(argv, file, directory)), directory)


def _flags(argv: list[str], file: Path, directory: Path) -> list[str]:
    """The compile's flags: the launcher and compiler, ``-c``, ``-o FILE`` and the source left out."""
    while argv and Path(argv[0]).name in LAUNCHERS:
        argv = argv[1:]
    flags, rest = [], iter(argv[1:])
    for given in rest:
        if given in ("-c", "--compile"):
            continue
        if given in ("-o", "--output-file"):
            next(rest, None)
            continue
        if given.startswith("-o") and len(given) > 2 or given.startswith("--output-file="):
            continue
        if not given.startswith("-") and (directory / given).resolve() == file.resolve():
            continue
        flags.append(given)
    return flags


def with_build_flags(specs: list[KernelSpec], common: CompileOptions, build: BuildCommands,
                     args: argparse.Namespace) -> tuple[list[KernelSpec], CompileOptions, list[str]]:
    """``specs`` each with its file's own options from ``build``; the options
    the fused file compiles with (what they share); notes for the user."""
    return with_file_options(specs, common, build.file_options(args, [s.file for s in specs]), str(build.path))
