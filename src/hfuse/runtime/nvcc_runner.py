"""nvcc in place of NVRTC, for sources whose kept headers NVRTC cannot read.

NVRTC has no host C++ library, so a kernel whose file keeps PyTorch's headers
(``torch/extension.h``, ``ATen/...``: ``at::Half``, ``PackedTensorAccessor32``,
``at::opmath_type``) compiles with nvcc only. ``run_nvcc`` runs one ``CompileJob`` through
nvcc and returns what ``run_nvrtc`` would: the cubin, ptxas's report, the PTX, and each
name expression's symbol.

NVRTC lowers name expressions itself; nvcc has no such option. So each expression is
written after the source as a ``__device__`` pointer initialised with its address
(``__device__ void* hfuse_name_0 = (void*)&ns::k<float, 4>;``): that instantiates a
template kernel as NVRTC's name expression does, and the PTX names the symbol it points
to. The pointers cost 8 bytes each of global memory in the module and change no kernel.
"""
from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ..toolkit import find_cuda_tool
from .binary import CompileError, CompiledBinary, CompileJob
from .ptxas import parse_ptxas

FAILED_NAME = "hfuse: nvcc could not take the name expression"
"""How a failed name expression is said in the log (``symbols.failed_name_expressions`` reads it)."""
_POINTER = re.compile(r"\bhfuse_name_(\d+)\s*=\s*(?:generic\()?\s*([\w$.]+)\s*\)?\s*;")
_ERROR_LINE = re.compile(r"^kernel\.cu\((\d+)\): error", re.MULTILINE)
_TIMEOUT_S = 900.0
"""PyTorch's headers take nvcc 20-30 s per source; a compile this long is stuck."""


def nvcc_executable() -> str:
    """nvcc on ``PATH`` or in the toolkit's folder, or a ``CompileError`` that says why it is needed."""
    found = find_cuda_tool("nvcc")
    if found is None:
        raise CompileError("nvcc is not on PATH: a source that keeps PyTorch's headers compiles only with nvcc "
                           "(NVRTC cannot read them)", "", ())
    return found


@functools.cache
def nvcc_version() -> tuple[int, ...]:
    """nvcc's release (``(13, 0)``): it decides the code, so it keys what is cached."""
    out = subprocess.run([nvcc_executable(), "--version"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"release (\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def with_name_pointers(source: str, names: Sequence[str]) -> tuple[str, int]:
    """``source`` followed by one ``__device__`` pointer per name expression, and the line
    the first of them is on."""
    head = source + ("" if source.endswith("\n") else "\n") + "\n// hfuse: each name expression's symbol\n"
    lines = [f"__device__ void* hfuse_name_{i} = (void*)(&{name.lstrip('&')});" for i, name in enumerate(names)]
    return head + "\n".join(lines) + "\n", head.count("\n") + 1


def run_nvcc(job: CompileJob) -> CompiledBinary:
    """nvcc -cubin in a folder of its own: the binary, ptxas's report, the PTX and the
    symbols of ``job.names``, or a ``CompileError`` with nvcc's output."""
    source, first = with_name_pointers(job.source, job.names)
    with tempfile.TemporaryDirectory(prefix="hfuse-nvcc-") as tmp:
        folder = Path(tmp)
        (folder / "kernel.cu").write_text(source)
        cmd = [nvcc_executable(), "-cubin", "-o", "kernel.cubin", "--keep", "--keep-dir", ".", *job.options, "kernel.cu"]
        try:
            proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CompileError(f"nvcc did not finish compiling {', '.join(job.names) or 'the source'} in "
                               f"{_TIMEOUT_S:.0f} s", "", job.options) from None
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            failed = sorted({job.names[i] for line in _ERROR_LINE.findall(log)
                             if 0 <= (i := int(line) - first) < len(job.names)})
            log += "".join(f"\n{FAILED_NAME} {name}" for name in failed)
            raise CompileError(f"nvcc could not compile {', '.join(job.names) or 'the source'}", log, job.options)
        cubin = (folder / "kernel.cubin").read_bytes()
        ptx_files = sorted(folder.glob("kernel*.ptx"))
        ptx = ptx_files[0].read_text(errors="replace") if ptx_files else ""
    symbols = {int(i): symbol for i, symbol in _POINTER.findall(ptx)}
    missing = [name for i, name in enumerate(job.names) if i not in symbols]
    if missing:
        raise CompileError(f"nvcc compiled the source, but its PTX names no symbol for {', '.join(missing)}", log,
                           job.options)
    return CompiledBinary(
        key=hashlib.sha256(cubin).hexdigest(),
        cubin=cubin,
        lowered={name: symbols[i] for i, name in enumerate(job.names)},
        log=log,
        options=job.options,
        ptx=ptx,
        ptxas=parse_ptxas(log, demangle=False),
    )
