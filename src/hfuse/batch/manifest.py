"""A manifest: many tuning requests in one YAML or TOML file.

::

    name: nightly                  # optional; names the summary
    output: results/nightly        # plans, fused files, summary (default: beside the manifest)
    seed: 0                        # inputs of benchmark workloads
    tune: {refine: true}           # settings for every request (each may add its own)
    compile: {std: c++17}          # nvcc's -I/-D/-U/-include/-std for every request
    requests:
      - name: maxpool_upsample
        workloads: [maxpool, upsample]
        sizes: [128, 256, 512]     # one request per size: maxpool_upsample-128, ...
        layouts: [horizontal, dynamic]
      - name: mine
        launches: my_inputs.py:make_launches   # returns [KernelLaunch, ...]
        args: {n: 4096}            # its keyword arguments
        compile: {include_dirs: [include]}

Every request becomes a ``TuneRequest`` value: its name (unique: it names the output
files), how to make its inputs (``inputs``), its settings and compile options. A file
without ``requests:`` is a single tune config (``hfuse tune CONFIG``), read by
``request_of_config`` into one request.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..config import compile_options, read_config_file
from ..errors import HFuseError, Location
from ..frontend.options import CompileOptions
from ..spec import FileOptions
from ..tuning.tuner import TuneSettings
from .inputs import Inputs, WorkloadInputs, function_of, workloads_of

CONFIG_KEYS = frozenset({"name", "workloads", "launches", "args", "tune", "output", "seed", "compile"})
"""A single tune config's keys."""
MANIFEST_KEYS = frozenset({"name", "output", "seed", "tune", "compile", "requests"})
REQUEST_KEYS = frozenset({"name", "workloads", "launches", "args", "sizes", "layouts", "tune", "compile", "seed"})


@dataclass(frozen=True)
class TuneRequest:
    """One tuning job of a batch, as a value that travels to a worker or another machine."""

    name: str
    inputs: Inputs
    settings: TuneSettings
    options: CompileOptions
    build: tuple[FileOptions, ...] = ()
    """A compile database's options per file (``-p``): each kernel's file is read with its own,
    the fused file compiled with what they share (``spec.with_file_options``)."""

    def identity(self) -> str:
        """A digest of everything the request says (not of the files it names: the tuner's
        cache key covers those): a batch resumed after a kill knows its finished requests by it."""
        payload = {"name": self.name, "inputs": self.inputs.describe(), "settings": self.settings.to_dict(),
                   "options": self.options.to_dict(),
                   **({"build": [(str(b.file), b.options.to_dict()) for b in self.build]} if self.build else {})}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Manifest:
    path: Path
    name: str
    output: Path
    requests: tuple[TuneRequest, ...]


def settings_of(data: Any, where: Location, base: TuneSettings | None = None) -> TuneSettings:
    """A ``tune:`` section as ``TuneSettings`` (on top of ``base``'s)."""
    if data is None:
        return base or TuneSettings()
    if not isinstance(data, dict):
        raise HFuseError("'tune' must be a mapping of tune settings", where)
    known = {f.name for f in fields(TuneSettings)}
    unknown = set(data) - known
    if unknown:
        raise HFuseError(f"unknown tune settings: {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})", where)
    merged = {**(base.to_dict() if base else {}), **data}
    try:
        return TuneSettings(**merged)
    except HFuseError as err:
        raise HFuseError(err.message, where, hint=err.hint) from err
    except TypeError as err:
        raise HFuseError(f"bad tune settings: {err}", where) from err


def _merged_options(common: CompileOptions, section: Any, path: Path) -> CompileOptions:
    if section is None:
        return common
    own = compile_options(section, path)
    return common.extended(include_dirs=own.include_dirs, defines=[str(d) for d in own.defines],
                           undefines=own.undefines, pre_includes=own.pre_includes,
                           std=own.std if "std" in section else None, system_include_dirs=own.system_include_dirs)


def _inputs(entry: dict[str, Any], path: Path, where: Location, seed: int, size: int | None) -> Inputs:
    if ("workloads" in entry) == ("launches" in entry):
        raise HFuseError("a request needs 'workloads' (benchmark kernels) or 'launches: FILE.py:FUNCTION', "
                         "one of the two", where)
    if "workloads" in entry:
        if "args" in entry:
            raise HFuseError("'args' are for a 'launches' function; a workload takes 'size'", where)
        return WorkloadInputs(workloads_of(entry["workloads"], where, size), seed)
    if size is not None:
        raise HFuseError("'sizes' are for benchmark workloads; give a 'launches' function its shapes in 'args'", where)
    return function_of(entry["launches"], path.parent, where, entry.get("args"))


def request_of_config(data: dict[str, Any], path: Path) -> TuneRequest:
    """A single tune config (``hfuse tune CONFIG``) as a request."""
    where = Location(path)
    unknown = set(data) - CONFIG_KEYS
    if unknown:
        raise HFuseError(f"unknown keys in a tune config: {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(CONFIG_KEYS))})", where)
    inputs = _inputs(data, path, where, _seed(data.get("seed", 0), where), None)
    settings = settings_of(data.get("tune"), where)
    name = str(data.get("name") or "")
    return TuneRequest(name, inputs, settings, compile_options(data.get("compile"), path))


def _seed(value: Any, where: Location) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise HFuseError(f"'seed' must be an integer, not {value!r}", where)
    return value


def _name(value: Any, where: Location) -> str:
    if not isinstance(value, str) or not value or not all(c.isalnum() or c in "-_.+" for c in value):
        raise HFuseError(f"a request's name must be letters, digits and '-_.+' (it names files), not {value!r}", where)
    return value


def read_manifest(path: str | Path) -> Manifest:
    path = Path(path)
    data = read_config_file(path)
    return manifest_of(data, path)


def manifest_of(data: dict[str, Any], path: Path) -> Manifest:
    top = Location(path)
    unknown = set(data) - MANIFEST_KEYS
    if unknown:
        raise HFuseError(f"unknown keys in a manifest: {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(MANIFEST_KEYS))})", top,
                         hint="each request's own keys go under 'requests:'")
    entries = data.get("requests")
    if not isinstance(entries, list) or not entries:
        raise HFuseError("'requests' must be a non-empty list of tuning requests", top)
    seed = _seed(data.get("seed", 0), top)
    common_settings = settings_of(data.get("tune"), top)
    common_options = compile_options(data.get("compile"), path)
    requests: list[TuneRequest] = []
    where_of: dict[str, str] = {}
    for index, entry in enumerate(entries, 1):
        where = Location(path, kernel=f"request #{index}")
        if not isinstance(entry, dict):
            raise HFuseError(f"request #{index} must be a mapping (name, workloads or launches, ...)", where)
        unknown = set(entry) - REQUEST_KEYS
        if unknown:
            raise HFuseError(f"unknown keys in request #{index}: {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(REQUEST_KEYS))})", where)
        name = _name(entry.get("name"), where)
        where = Location(path, kernel=f"request '{name}'")
        settings = settings_of(entry.get("tune"), where, common_settings)
        if "layouts" in entry:
            layouts = entry["layouts"]
            settings = settings_of({"layouts": [layouts] if isinstance(layouts, str) else layouts}, where, settings)
        options = _merged_options(common_options, entry.get("compile"), path)
        own_seed = _seed(entry.get("seed", seed), where)
        sizes = entry.get("sizes")
        if sizes is not None and (not isinstance(sizes, list) or not sizes):
            raise HFuseError("'sizes' must be a non-empty list of sizes", where)
        for size in sizes or [None]:
            full = f"{name}-{size}" if size is not None else name
            if full in where_of:
                raise HFuseError(f"two requests are named '{full}' ({where_of[full]} and request #{index}): "
                                 "names must be unique, they name the output files", where)
            where_of[full] = f"request #{index}"
            requests.append(TuneRequest(full, _inputs(entry, path, where, own_seed, size), settings, options))
    name = data.get("name") or path.stem
    output = Path(data["output"]) if "output" in data else path.parent / f"{path.stem}-results"
    if not output.is_absolute():
        output = path.parent / output
    return Manifest(path, str(name), output, tuple(requests))


def is_manifest(data: dict[str, Any]) -> bool:
    return "requests" in data
