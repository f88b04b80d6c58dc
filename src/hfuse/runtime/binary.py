"""What a compile produces, as values: the binary, its kernels' resources and parameters,
and the errors of compiling and launching. No CUDA, no compiler: every runtime module
(the compiler, the binary cache, the loaded kernels, parameter packing, symbols) builds
on these, so none of them needs another's module.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Literal, Sequence

from ..errors import HFuseError
from .ptxas import Resources, find_resources

DEFAULT_SMEM_LIMIT = 48 * 1024
"""Static + dynamic shared memory a launch gets without opting in."""


class CompileError(HFuseError):
    """NVRTC (or nvcc) rejected a source; ``log`` is the full compiler log."""

    def __init__(self, message: str, log: str, options: Sequence[str] = ()):
        self.log = log
        self.options = tuple(options)
        super().__init__(message, hint="compiler log:\n" + (log.strip()[-6000:] or "(empty)"))


class LaunchError(HFuseError):
    """A kernel could not be launched or failed while running."""


@dataclass(frozen=True)
class PtxParam:
    """One kernel parameter as PTX declares it: its size in bytes and whether it is a pointer-sized word."""

    name: str
    size: int
    ptx_type: str


@dataclass(frozen=True)
class CompiledBinary:
    """What NVRTC produced for one source: thread-safe to pass around."""

    key: str
    cubin: bytes = field(repr=False)
    lowered: dict[str, str]
    """Name expression (e.g. ``hist<float, 4>`` or ``k1_k2__hfused``) -> symbol."""
    log: str
    options: tuple[str, ...]
    ptx: str = field(default="", repr=False)
    ptxas: dict[str, Resources] = field(default_factory=dict)

    def symbol(self, name: str) -> str:
        return self.lowered.get(name, name)

    def params(self, name: str) -> list[PtxParam] | None:
        """The kernel's parameters as PTX declares them, or None if PTX is unavailable."""
        return parse_ptx_params(self.ptx, self.symbol(name)) if self.ptx else None

    def missing_reports(self, names: Sequence[str]) -> list[str]:
        """The kernels among ``names`` whose ptxas report the log lacks (``&name`` asks for a
        variable's lowered name: no report is expected for it)."""
        return [n for n in names if not n.startswith("&") and find_resources(self.ptxas, self.symbol(n)) is None]


Toolchain = Literal["nvrtc", "nvcc"]
"""What compiles a source for the GPU: NVRTC (in process, the default), or nvcc for a
source whose kept headers NVRTC cannot read (``compile.toolchain_for``)."""


@dataclass(frozen=True)
class CompileJob:
    """One compile as a value: what a pool of processes (``compile_pool``) or a Ray task
    is handed. Everything it needs is here; it needs no GPU and no CUDA context.
    ``options`` are spelled for ``toolchain``."""

    source: str
    names: tuple[str, ...]
    options: tuple[str, ...]
    toolchain: Toolchain = "nvrtc"


CompileRunner = Callable[[CompileJob], CompiledBinary]
"""Runs a ``CompileJob`` somewhere (this process by default) and returns its binary, or
raises ``CompileError`` with the compiler's log."""


@dataclass(frozen=True)
class KernelResources:
    """What the driver reports for a loaded kernel, plus ptxas's spill split when known."""

    registers: int
    local_bytes: int
    """Per-thread local memory: spills and stack together."""
    static_smem: int
    const_bytes: int
    max_threads_per_block: int
    binary_version: int
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_frame: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_ptx_params(ptx: str, symbol: str) -> list[PtxParam] | None:
    """Parameters of ``.entry symbol(...)`` in PTX text, or None if the entry is not there."""
    m = re.search(r"\.entry\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)", ptx)
    if m is None:
        return None
    params = []
    for decl in m.group(1).split(","):
        decl = decl.strip()
        if not decl:
            continue
        name = decl.split()[-1]
        count = 1
        if arr := re.search(r"(\w+)\[(\d+)\]$", decl):
            name, count = arr.group(1), int(arr.group(2))
        t = re.search(r"\.([busf])(8|16|32|64)\b", decl)
        width = int(t.group(2)) // 8 if t else 1
        params.append(PtxParam(name=name, size=width * count, ptx_type=t.group(0) if t else ""))
    return params


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()
