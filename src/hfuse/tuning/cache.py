"""A directory of tuned plans, keyed by everything that can change the answer.

The key is a SHA-256 of a canonical JSON of: GPU name, the toolkit that compiles (the GPU's
architecture and NVRTC's version: not the driver, so a plan tuned on one H100 serves every
H100 with the same toolkit, and never an A100), each source's hash, the SHA-256 of every user header the sources read, the compile options
(``-I/-D/-U/-include/-std``, which decide what the sources mean), each launch's
description (kernel instance, block, grid, dynamic shared memory, every argument's dtype
and shape or scalar value), and the tuner's settings. Change any of them (edit a header,
say) and the key changes, so a stale plan is never served. Location: the ``directory``
argument, else ``$HFUSE_CACHE_DIR``, else ``~/.cache/hfuse``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..files import default_cache_dir, write_atomically
from ..launch import KernelLaunch, describe_symbol
from .plan import Plan, load_plan



def describe_arg(value: Any) -> dict[str, Any]:
    """An argument as data: arrays by dtype and shape (not contents), scalars by value."""
    if isinstance(value, np.generic):
        return {"scalar": str(value.dtype), "value": value.item() if value.dtype.kind != "V" else value.tobytes().hex()}
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return {"array": str(value.dtype), "shape": list(value.shape)}
    return {"python": type(value).__name__, "value": repr(value)}


def describe_launch(launch: KernelLaunch) -> dict[str, Any]:
    """What of a launch can change the tuning result (sizes, dtypes, grids), as data."""
    block = launch.kernel.block
    described = {
        "kernel": launch.kernel.instance,
        "file": launch.kernel.file.name,
        "block": list(block.as_tuple()),
        "tunable": launch.kernel.tunable,
        "grid": list(launch.grid_for(block).as_tuple()),
        "grid_free": launch.grid_free,
        "dynamic_smem": launch.smem_for(block),
        "args": [describe_arg(a) for a in launch.args],
        "outputs": [[o.index, o.compare, o.rtol, o.atol] for o in launch.outputs],
    }
    if launch.kernel.line is not None:  # which of kernels of one name
        described["line"] = launch.kernel.line
    if launch.kernel.options is not None:  # this kernel's own -I/-D/-std
        described["options"] = launch.kernel.options.to_dict()
    if launch.symbols:  # __constant__/__device__ data by name, dtype and shape (not contents)
        described["symbols"] = [[name, describe_symbol(launch.symbols[name])["dtype"],
                                 describe_symbol(launch.symbols[name])["shape"]] for name in sorted(launch.symbols)]
    return described


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def header_digests(headers: Sequence[str | Path]) -> list[list[str]]:
    """``[path, SHA-256 of its bytes]`` per user header (``PreprocessedSource.headers``),
    so editing a header a kernel includes invalidates a cached plan."""
    out = []
    for header in dict.fromkeys(str(h) for h in headers):
        try:
            digest = hashlib.sha256(Path(header).read_bytes()).hexdigest()
        except OSError:
            digest = "unreadable"
        out.append([header, digest])
    return out


def cache_key(
    *,
    gpu: str,
    toolkit: str,
    sources: Sequence[str],
    launches: Sequence[dict[str, Any]],
    settings: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    headers: Sequence[Sequence[str]] = (),
) -> str:
    """A stable key: sources are given as text (hashed here); launches as ``describe_launch``;
    options as ``CompileOptions.to_dict()``; headers as ``header_digests``."""
    payload = {
        "gpu": gpu,
        "toolkit": toolkit,
        "sources": [source_digest(s) for s in sources],
        "headers": [list(h) for h in headers],
        "options": options or {},
        "launches": list(launches),
        "settings": settings or {},
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class PlanCache:
    """``get``/``put`` of plans by key, one JSON file per key."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> Plan | None:
        path = self.path_for(key)
        if not path.is_file():
            return None
        try:
            return load_plan(path)
        except (ValueError, KeyError, TypeError):
            return None  # unreadable or from an incompatible version: tune again

    def put(self, key: str, plan: Plan) -> Path:
        plan.cache_key = key
        # Renamed into place, so a concurrent reader never sees half a file.
        return write_atomically(self.path_for(key), plan.to_json() + "\n")
