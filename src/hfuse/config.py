"""Fusion requests from a config file (YAML or TOML) or from command-line kernel specs.

A config file describes several kernels and files::

    output: fused.cu
    layout: horizontal            # or vertical, interblock, interleaved, dynamic:2:1 ('strategy:' is read too)
    register_cap: {min_blocks: 2} # optional; or {max_registers: 64}
    kernels:
      - {file: maxpool.cu, name: maxpool2d_forward, block: 256, tunable: true}
      - {file: hist.cu, name: histogram, block: 512}
      - {file: axpy.cu, name: axpy, block: 128, template_args: [float, 4]}
    compile:                      # optional: nvcc's -I/-D/-U/-include/-std
      include_dirs: [include]
      defines: [BLOCK=16, USE_FAST_MATH]
      std: c++14

Paths are relative to the config file.
"""
from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from .errors import HFuseError, Location
from .files import read_text_file
from .layouts import Layout, layout_of
from .frontend.options import NO_OPTIONS, CompileOptions
from .frontend.parse import read_source_file, split_template_args
from .spec import Dim3, KernelSpec
from .registers import RegisterCap

_KERNEL_KEYS = {"file", "name", "block", "template_args", "tunable", "compile", "line"}
_TOP_KEYS = {"output", "layout", "strategy", "register_cap", "name", "barrier", "kernels", "tune", "pair", "workloads", "compile"}


@dataclass
class FuseRequest:
    kernels: list[KernelSpec]
    layout: Layout | None = None
    """The config's ``layout`` (``strategy``, its old name, is still read); None: hfuse chooses."""
    register_cap: RegisterCap | None = None
    name: str | None = None
    barrier_form: str = "barrier"
    output: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Sections other commands read (``tune``)."""
    options: CompileOptions = NO_OPTIONS
    """nvcc's ``-I/-D/-U/-include/-std`` for the sources (the config's ``compile:``)."""
    notes: list[str] = field(default_factory=list)
    """What the user should know about the config (an old key name read as the new one)."""


def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    text = read_text_file(path, "config file")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        if line is None:
            line = getattr(exc, "lineno", None)
            line = line - 1 if line is not None else None
        # one line: YAML's own message quotes the source over several
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise HFuseError(f"the config file is not valid {path.suffix.lstrip('.').upper() or 'YAML'}: {problem}",
                         Location(path, line + 1 if line is not None else None)) from exc
    if not isinstance(data, dict):
        raise HFuseError("the config file must be a mapping with a 'kernels' list", Location(path))
    return data


def load_config(path: str | Path) -> FuseRequest:
    path = Path(path)
    data = read_config_file(path)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise HFuseError(f"unknown config keys: {', '.join(sorted(unknown))} (known: {', '.join(sorted(_TOP_KEYS))})", Location(path))
    entries = data.get("kernels")
    if not isinstance(entries, list) or not entries:
        raise HFuseError("the config file needs a non-empty 'kernels' list", Location(path))
    kernels = [_kernel(entry, i, path) for i, entry in enumerate(entries, start=1)]
    cap = data.get("register_cap")
    try:
        register_cap = RegisterCap.from_dict(cap) if cap else None
    except (ValueError, TypeError) as exc:
        raise HFuseError(f"register_cap: {exc}", Location(path)) from exc
    output = data.get("output")
    _check_choices(data, path)
    options = compile_options(data.get("compile"), path)
    kernels = [_own_options(k, entry, options, path) for k, entry in zip(kernels, entries)]
    return FuseRequest(
        kernels=kernels,
        layout=_layout(data, path),
        register_cap=register_cap,
        name=data.get("name"),
        barrier_form=data.get("barrier", "barrier"),
        output=Path(os.path.normpath(path.parent / output)) if output else None,
        extra={k: v for k, v in data.items() if k in ("tune", "pair", "workloads")},
        options=options,
        notes=["note: 'strategy:' is the old name of 'layout:'; it is read as 'layout:'"] if "strategy" in data else [],
    )


_CHOICES = {"barrier": ("barrier", "bar")}


def _layout(data: dict[str, Any], path: Path) -> Layout | None:
    """The config's ``layout:`` (or ``strategy:``, its old name)."""
    if "layout" in data and "strategy" in data:
        raise HFuseError("give 'layout' only ('strategy' is its old name)", Location(path))
    key = "strategy" if "strategy" in data else "layout"
    if key not in data:
        return None
    spec = data[key]
    if not isinstance(spec, str):
        raise HFuseError(f"'{key}' must be a layout's name (e.g. horizontal), not {spec!r}", Location(path))
    try:
        return layout_of(spec)
    except HFuseError as exc:
        raise HFuseError(f"'{key}': {exc.message}", Location(path), hint=exc.hint) from None


def _check_choices(data: dict[str, Any], path: Path) -> None:
    """The top-level values of plain types: each of its type, or an error naming the key."""
    for key, allowed in _CHOICES.items():
        if key in data and data[key] not in allowed:
            raise HFuseError(f"'{key}' must be one of {', '.join(allowed)}, not {data[key]!r}", Location(path))
    for key in ("output", "name"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise HFuseError(f"'{key}' must be a string, not {type(data[key]).__name__} ({data[key]!r})",
                             Location(path))


def compile_options(section: Any, path: Path) -> CompileOptions:
    """A config's ``compile:`` mapping as ``CompileOptions``, paths relative to the config file."""
    if section is None:
        return NO_OPTIONS
    if not isinstance(section, dict):
        raise HFuseError("'compile' must be a mapping (include_dirs, system_include_dirs, defines, undefines, "
                         "pre_includes, std)",
                         Location(path))
    try:
        return CompileOptions.from_dict(section).resolved(path.parent)
    except HFuseError as exc:
        raise HFuseError(f"compile: {exc.message}", Location(path), hint=exc.hint) from exc


def _own_options(spec: KernelSpec, entry: Any, common: CompileOptions, path: Path) -> KernelSpec:
    """A kernel's own ``compile:`` (its file built with other -D/-I) on top of the request's."""
    if not isinstance(entry, dict) or entry.get("compile") is None:
        return spec
    own = compile_options(entry["compile"], path)
    merged = common.extended(
        include_dirs=own.include_dirs, defines=[str(d) for d in own.defines], undefines=own.undefines,
        pre_includes=own.pre_includes, std=own.std if "std" in entry["compile"] else None,
        system_include_dirs=own.system_include_dirs,
    )
    return replace(spec, options=merged)


def _kernel(entry: Any, index: int, path: Path) -> KernelSpec:
    where = Location(path, None, f"#{index}")
    if not isinstance(entry, dict) or not {"file", "name", "block"} <= set(entry):
        raise HFuseError(f"kernel #{index} needs 'file', 'name' and 'block'", where)
    unknown = set(entry) - _KERNEL_KEYS
    if unknown:
        raise HFuseError(f"kernel #{index} has unknown keys: {', '.join(sorted(unknown))}", where)
    try:
        block = Dim3.of(entry["block"])
    except ValueError as exc:
        raise HFuseError(f"kernel #{index} ({entry['name']}): {exc}", where) from exc
    targs = entry.get("template_args", ())
    if isinstance(targs, (str, int)):
        targs = [targs]
    line = entry.get("line")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        raise HFuseError(f"kernel #{index} ({entry['name']}): 'line' is the line its definition starts on, "
                         f"a positive integer, not {line!r}", where)
    return KernelSpec(path.parent / entry["file"], str(entry["name"]), block, tuple(str(a) for a in targs),
                      bool(entry.get("tunable", False)), line=line)


_CLI_KERNEL = re.compile(
    r"^(?:(?P<file>[^:]+\.\w+):)?(?P<name>(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)(?:<(?P<targs>.*)>)?"
    r"(?:@(?P<line>\d+))?:(?P<block>[\dx,]+)$"
)


def parse_kernel_option(text: str, files: list[Path], sources: dict[Path, str],
                        kernels_in: Callable[[], Mapping[Path, Sequence[str]]] | None = None) -> KernelSpec:
    """``NAME:BLOCK``, ``NAME<float, 4>:BLOCK`` or ``FILE:NAME:BLOCK`` from ``--kernel`` (FILE a path,
    or the name of one of ``files`` where no such path is there); NAME may be
    qualified (``mylib::scale:256``), and followed by ``@LINE`` where kernels of that name differ
    only in their parameters (``norm<float>@580:256``, the one defined at line 580). The file is
    the one whose text names it; where none does (a kernel in a header a file includes, or one a
    macro defines), the one whose kernels, preprocessed, have that name: ``kernels_in`` tells
    each file's (qualified names)."""
    match = _CLI_KERNEL.match(text.strip())
    if not match:
        raise HFuseError(f"--kernel '{text}' is not NAME:BLOCK, NAME<TEMPLATE ARGS>:BLOCK or FILE:NAME:BLOCK (e.g. hist:512, stencil:16x16)")
    name, line = match.group("name"), int(match.group("line")) if match.group("line") else None
    try:
        block = Dim3.of(match.group("block"))
    except ValueError as exc:
        raise HFuseError(f"--kernel '{text}': {exc}") from exc
    targs = split_template_args(match.group("targs")) if match.group("targs") is not None else ()
    if match.group("file"):
        file = Path(match.group("file"))
        named = [f for f in files if f.parts[-len(file.parts):] == file.parts]
        if not file.exists() and len(named) == 1:
            file = named[0]  # the name of a file given among FILES (norm.cu for ggml-cuda/norm.cu)
        if file not in files:
            sources[file] = read_source_file(file)  # (a file not among FILES: the other options may look in it)
            files.append(file)
        return KernelSpec(file, name, block, targs, line=line)
    plain = name.split("::")[-1]  # a qualified name (mylib::scale) is written 'scale(' in its namespace
    holders = list(dict.fromkeys(f for f in files if re.search(rf"\b{re.escape(plain)}\s*\(", sources[f])))
    found = kernels_in() if not holders and kernels_in is not None and len(files) > 1 else {}
    if found:
        holders = [f for f, kernels in found.items() if any(name.lstrip(":") in (k, k.split("::")[-1]) for k in kernels)]
    if not holders:
        if len(files) == 1:
            return KernelSpec(files[0], name, block, targs, line=line)  # fuse() names the file's kernels
        listed = ", ".join(str(f) for f in files) or "no files given"
        defined = {k: f.name for f, kernels in found.items() for k in kernels}
        close = difflib.get_close_matches(plain, [k.split("::")[-1] for k in defined], n=3)
        hint = ("kernels they define: " + ", ".join(f"{k} ({f})" for k, f in list(defined.items())[:12])
                + (f" and {len(defined) - 12} more" if len(defined) > 12 else "")
                + (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "")) if defined else None
        raise HFuseError(f"no file defines a kernel named '{name}' ({listed})", Location(None, None, name), hint=hint)
    if len(holders) > 1:
        raise HFuseError(f"'{name}' appears in {', '.join(map(str, holders))}: say which with --kernel FILE:{name}:{block}")
    return KernelSpec(holders[0], name, block, targs, line=line)
