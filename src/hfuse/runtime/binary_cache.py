"""Compiled binaries kept on disk, so a kernel is compiled once across tuning runs.

A tuning run compiles each original kernel and every candidate with NVRTC; tuning the
same kernel beside another partner, or again after editing only the other kernel,
compiled it anew each time. The key is a SHA-256 of everything NVRTC sees: the source
text, every option (arch, -std, -I, -D, ...), the name expressions asked for, and
NVRTC's version. The options include ``-I`` directories but not the contents of headers
found there, which is why the tuner hands NVRTC sources whose user headers are already
inlined (only toolkit headers stay as ``#include``, and the NVRTC version covers them).

Each entry is ``<key>.cubin`` plus ``<key>.json`` (lowered names, log, PTX), both
written to a temporary name and renamed, the JSON last: a reader (another process
sharing the directory) sees a whole entry or none. A cubin whose hash does not match
its entry is treated as missing.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from ..files import write_atomically
from .binary import CompiledBinary
from .ptxas import parse_ptxas


class BinaryCache:
    """``get``/``put`` of ``CompiledBinary`` by ``key``, in one directory."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory).expanduser()

    @staticmethod
    def key(source: str, options: Sequence[str], names: Sequence[str], version: tuple[int, ...],
            toolchain: str = "nvrtc") -> str:
        """The entry of ``source`` compiled with ``options`` by ``toolchain`` at release ``version``."""
        payload = json.dumps({"source": hashlib.sha256(source.encode()).hexdigest(), "options": list(options),
                              "names": list(names), toolchain: list(version)}, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, key: str) -> CompiledBinary | None:
        meta_path, cubin_path = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text())
            cubin = cubin_path.read_bytes()
        except (OSError, ValueError):
            return None
        if hashlib.sha256(cubin).hexdigest() != meta.get("binary"):
            return None  # torn or foreign file: compile again
        return CompiledBinary(key=meta["binary"], cubin=cubin, lowered=dict(meta["lowered"]), log=meta["log"],
                              options=tuple(meta["options"]), ptx=meta["ptx"],
                              ptxas=parse_ptxas(meta["log"], demangle=False))

    def put(self, key: str, binary: CompiledBinary) -> None:
        meta_path, cubin_path = self._paths(key)
        meta = {"binary": binary.key, "lowered": binary.lowered, "log": binary.log,
                "options": list(binary.options), "ptx": binary.ptx}
        write_atomically(cubin_path, binary.cubin)
        write_atomically(meta_path, json.dumps(meta))

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.directory / f"{key}.json", self.directory / f"{key}.cubin"
