"""How a tuning request's kernel launches are made, as values.

A request cannot carry its inputs: they are device arrays of the process that makes
them. It carries the recipe instead, which any process (a Ray actor on another machine,
the batch's process after a restart) turns into the same launches:

- ``WorkloadInputs``: benchmark workloads by name, size and seed (``hfuse.bench``);
- ``FunctionInputs``: a user's Python function ``FILE.py:FUNCTION`` returning
  ``[KernelLaunch, ...]``, called with the request's keyword arguments (shapes, say).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import HFuseError, Location
from ..launch import KernelLaunch


@dataclass(frozen=True)
class Workload:
    kernel: str
    size: int | None = None
    """None: the workload's default size."""
    block: Any = None


@dataclass(frozen=True)
class WorkloadInputs:
    workloads: tuple[Workload, ...]
    seed: int = 0

    def launches(self) -> list[KernelLaunch]:
        from ..bench.workloads import registry

        known = registry()
        out = []
        for w in self.workloads:
            workload = known[w.kernel]
            out.append(workload.make(w.size if w.size is not None else workload.default_size, block=w.block,
                                     seed=self.seed))
        return out

    def describe(self) -> Any:
        return {"workloads": [vars(w) for w in self.workloads], "seed": self.seed}


@dataclass(frozen=True)
class FunctionInputs:
    path: str
    """Absolute path of the Python file."""
    function: str
    args: tuple[tuple[str, Any], ...] = ()
    """Keyword arguments, as sorted pairs (a value must hash)."""

    def launches(self) -> list[KernelLaunch]:
        path = Path(self.path)
        where = Location(path)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise HFuseError(f"{path} is not a Python file", where)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        make = getattr(module, self.function, None)
        if make is None:
            raise HFuseError(f"{path} has no function '{self.function}'", where)
        result = list(make(**dict(self.args)))
        if not all(isinstance(l, KernelLaunch) for l in result):
            raise HFuseError(f"{path}:{self.function} must return a list of hfuse.KernelLaunch", where)
        return result

    def describe(self) -> Any:
        return {"launches": f"{self.path}:{self.function}", "args": dict(self.args)}


Inputs = WorkloadInputs | FunctionInputs


def workload_names() -> list[str]:
    from ..bench.workloads import registry

    return list(registry())


def workloads_of(entries: Any, where: Location, size: int | None = None) -> tuple[Workload, ...]:
    """A config's ``workloads:`` list (names, or ``{kernel, size, block}``) checked against
    the registry; ``size`` is given to entries without their own."""
    if not isinstance(entries, list) or not entries:
        raise HFuseError("'workloads' must be a list of benchmark kernels ({kernel: NAME, size: N})", where)
    known = workload_names()
    out = []
    for entry in entries:
        entry = {"kernel": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or set(entry) - {"kernel", "size", "block"}:
            raise HFuseError(f"a workload is a name or {{kernel, size, block}}, not {entry!r}", where)
        name = entry.get("kernel")
        if name not in known:
            raise HFuseError(f"unknown benchmark workload '{name}' (known: {', '.join(known)})", where)
        own = entry.get("size", size)
        if own is not None and (not isinstance(own, int) or isinstance(own, bool) or own <= 0):
            raise HFuseError(f"the size of workload '{name}' must be a positive integer, not {own!r}", where)
        out.append(Workload(name, own, entry.get("block")))
    return tuple(out)


def function_of(spec: Any, base: Path, where: Location, args: Mapping[str, Any] | None = None) -> FunctionInputs:
    """``launches: FILE.py:FUNCTION`` (relative to ``base``) and its keyword arguments."""
    text = str(spec)
    path_text, _, function = text.rpartition(":")
    path = (base / path_text).resolve()
    if not path_text or not function.isidentifier() or not path.is_file():
        raise HFuseError(f"'launches: {text}' must be FILE.py:FUNCTION of an existing file", where)
    if args is not None and not isinstance(args, dict):
        raise HFuseError("'args' must be a mapping of keyword arguments for the launches function", where)
    try:
        pairs = tuple(sorted((str(k), tuple(v) if isinstance(v, list) else v) for k, v in (args or {}).items()))
        hash(pairs)
    except TypeError:
        raise HFuseError("'args' values must be numbers, strings or lists of them", where) from None
    return FunctionInputs(str(path), function, pairs)
