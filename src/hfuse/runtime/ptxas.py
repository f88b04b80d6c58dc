"""Resource usage per kernel from ptxas's verbose report (``-Xptxas -v``).

The report is the only place that says how much of a kernel's local memory is spills
(the driver's ``local_size_bytes`` lumps spills and stack together), and it needs no
GPU: ``nvcc_resources`` compiles with nvcc in a temporary folder, so CPU tests and the
``hfuse fuse`` command can show registers and spills of a fused kernel. NVRTC accepts
the same ``-Xptxas -v`` and prints the same text into its log.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from ..errors import HFuseError


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one function (bytes unless named otherwise)."""

    name: str
    """Raw (mangled) symbol name."""
    demangled: str | None = None
    arch: str | None = None
    registers: int = 0
    barriers: int | None = None
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    static_smem: int = 0
    cmem: int = 0
    """Bytes of constant bank 0 (kernel parameters and the like), when reported."""
    entry: bool = False
    """True for a __global__ function (ptxas "Compiling entry function")."""

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for ([^\s:]+)")
_FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_ptxas(text: str, demangle: bool = True) -> dict[str, Resources]:
    """Parses a ptxas ``-v`` report into ``{mangled name: Resources}``.

    Handles both the CUDA 11/12 form (``Used 8 registers, 352 bytes cmem[0]``) and the
    CUDA 13 form (``Used 10 registers, used 0 barriers, 1024 bytes smem``). Device
    functions that are not inlined get an entry too (``entry=False``).
    """
    found: dict[str, dict[str, Any]] = {}
    current: str | None = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            found.setdefault(current, {"name": current})
            found[current].update(arch=m.group(2), entry=True)
            continue
        if m := _PROPS.search(line):
            current = m.group(1)
            found.setdefault(current, {"name": current})
            continue
        if current is None:
            continue
        if m := _FRAME.search(line):
            found[current].update(
                stack_frame=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3))
            )
        if m := _USED.search(line):
            found[current]["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                found[current]["barriers"] = int(b.group(1))
            if s := _SMEM.search(line):
                found[current]["static_smem"] = int(s.group(1))
            if c := _CMEM.search(line):
                found[current]["cmem"] = int(c.group(1))
    result = {name: Resources(**values) for name, values in found.items()}
    if demangle:
        names = demangle_names(list(result))
        result = {n: replace(r, demangled=names.get(n)) for n, r in result.items()}
    return result


def demangle_names(names: Sequence[str]) -> dict[str, str]:
    """Demangled names via ``cu++filt`` (or ``c++filt``) when installed; else empty."""
    mangled = [n for n in names if n.startswith("_Z")]
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not mangled or tool is None:
        return {}
    try:
        out = subprocess.run(
            [tool], input="\n".join(mangled), capture_output=True, text=True, timeout=30, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(mangled, out)) if len(out) == len(mangled) else {}


def find_resources(resources: dict[str, Resources], name: str) -> Resources | None:
    """Looks a kernel up by mangled name, demangled name or plain function name."""
    if name in resources:
        return resources[name]
    base = name.split("<")[0].strip()
    for r in resources.values():
        if r.demangled and (r.demangled == name or r.demangled.split("(")[0].split("<")[0].strip().endswith(base)):
            return r
    # Itanium mangling puts the plain name after its length: _Z3addPfS_ -> 3add.
    matches = [r for r in resources.values() if r.entry and f"{len(base)}{base}" in r.name]
    return matches[0] if len(matches) == 1 else None


class NvccError(HFuseError):
    """nvcc failed; ``log`` holds its output."""

    def __init__(self, message: str, log: str):
        self.log = log
        advice = ""
        if (overflow := _PARAMETER_OVERFLOW.search(log)) is not None:
            message += (f": the kernel's parameters take {overflow.group(1)} bytes, more than the "
                        f"{overflow.group(2)} a kernel may have (a fused kernel takes every part's parameters)")
            advice = "fuse fewer kernels at once, or pass a large struct through a pointer; "
        super().__init__(message, hint=advice + "the compiler output follows:\n" + log[-4000:])


_PARAMETER_OVERFLOW = re.compile(r"Formal parameter space overflowed \((\d+) bytes required, max (\d+) bytes allowed\)")


def nvcc_resources(
    source: str,
    *,
    arch: str = "sm_90",
    options: Sequence[str] = (),
    nvcc: str | None = None,
    timeout: float = 300,
    std: str = "c++17",
) -> dict[str, Resources]:
    """Compiles ``source`` to a cubin with nvcc (no GPU needed) and parses the report.
    ``std``: the dialect (a fused file of C++20 inputs keeps their concepts)."""
    exe = nvcc or shutil.which("nvcc")
    if exe is None:
        raise HFuseError("nvcc is not on PATH", hint="install the CUDA toolkit or pass nvcc=")
    with tempfile.TemporaryDirectory(prefix="hfuse-nvcc-") as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source)
        cmd = [exe, f"-arch={arch}", "-cubin", f"-std={std}", "-Xptxas", "-v",
               "-o", str(Path(tmp) / "kernel.cubin"), *options, str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise NvccError(f"nvcc failed (exit {proc.returncode}) for {arch}", log)
    return parse_ptxas(log)
