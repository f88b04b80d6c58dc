"""Compiling CUDA source in tests, on the CPU: nvcc (a cubin, as the user's build does)
and NVRTC (through ``hfuse.runtime.compile.Compiler``, as ``hfuse tune`` does).

``compile_nvcc`` / ``compile_nvrtc`` return a ``CompileResult`` (log, ptxas's resources
per kernel) or, by default, raise an ``AssertionError`` carrying the full compiler log
and the source lines around each error, so a failing test says what went wrong without
a second run. Tests import it as ``from toolchain import compile_nvcc`` (``tests/`` is on
``sys.path``: pytest puts the rootdir conftest's folder there).
"""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from hfuse.runtime.binary import CompileError
from hfuse.runtime.compile import Compiler
from hfuse.toolkit import cuda_include_dirs
from hfuse.runtime.ptxas import Resources, find_resources, parse_ptxas

NVRTC_PROGRAM = "hfuse_kernel.cu"  # the name Compiler gives NVRTC's program (errors cite it)
_ERROR_RE = re.compile(r"^(?P<file>[^\s()][^()]*?)\((?P<line>\d+)\): (?:catastrophic )?error", re.M)


@dataclass(frozen=True)
class CompileResult:
    tool: str
    """``nvcc`` or ``nvrtc``."""
    ok: bool
    log: str
    """Everything the compiler said: warnings, errors and ptxas's ``-v`` report."""
    source: str = field(repr=False)
    options: tuple[str, ...] = ()
    resources: dict[str, Resources] = field(default_factory=dict)
    """ptxas's report per function, by (mangled) symbol."""
    lowered: dict[str, str] = field(default_factory=dict)
    """NVRTC: name expression -> symbol."""
    cubin: bytes = field(default=b"", repr=False)
    path: Path | None = None
    """nvcc: the source file compiled."""
    seconds: float = 0.0

    @property
    def registers(self) -> dict[str, int]:
        """Registers per function symbol, from ptxas's report."""
        return {name: r.registers for name, r in self.resources.items()}

    def kernel(self, name: str) -> Resources:
        """ptxas's report for a kernel, by symbol, NVRTC name expression or plain name."""
        found = find_resources(self.resources, self.lowered.get(name, name))
        if found is None:
            raise AssertionError(f"{self.tool}: no ptxas report for {name!r} (have {sorted(self.resources)})\n{self.log}")
        return found

    def failure(self) -> str:
        """The message of a failed compile: command, full log and the source near each error."""
        head = f"{self.tool} failed" + (f" on {self.path}" if self.path else "")
        return f"{head}\noptions: {' '.join(self.options)}\n--- log ---\n{self.log.strip()}\n{error_context(self.source, self.log, self.path)}"

    def check(self) -> "CompileResult":
        if not self.ok:
            raise AssertionError(self.failure())
        return self


def error_context(source: str, log: str, path: Path | None = None, radius: int = 3, limit: int = 5) -> str:
    """The source lines around the first ``limit`` errors the log places in ``source``."""
    lines = source.splitlines()
    names = {NVRTC_PROGRAM} | ({str(path), path.name} if path else set())
    shown: list[int] = []
    for m in _ERROR_RE.finditer(log):
        if m.group("file") not in names and Path(m.group("file")).name not in names:
            continue
        n = int(m.group("line"))
        if n not in shown:
            shown.append(n)
        if len(shown) == limit:
            break
    out = []
    for n in shown:
        lo, hi = max(1, n - radius), min(len(lines), n + radius)
        out.append(f"--- source around line {n} ---")
        out += [f"{'>' if i == n else ' '}{i:5d}: {lines[i - 1]}" for i in range(lo, hi + 1)]
    return "\n".join(out)


# --------------------------------------------------------------------------- nvcc
def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def extra_include_dirs() -> list[str]:
    """Header folders NVRTC is given that are not a toolkit's own (pip's ``nvidia/cu13/include``
    with ``curand_kernel.h`` from nvidia-curand, where the toolkit has no cuRAND): nvcc needs
    ``-I`` for those. A toolkit's ``include`` (it has ``cuda_runtime.h``) and its ``cccl`` are
    left to nvcc, which finds its own."""
    return [d for d in cuda_include_dirs()
            if not (Path(d) / "cuda_runtime.h").is_file() and Path(d).name != "cccl"]


def compile_nvcc(source: str, *, flags: Sequence[str] = (), arch: str = "sm_90", workdir: Path,
                 filename: str | None = None, check: bool = True, timeout: float = 300) -> CompileResult:
    """``nvcc -arch=ARCH -std=c++17 -cubin -Xptxas -v FLAGS`` on ``source`` written to ``workdir``."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    name = filename or f"src_{hashlib.sha256(source.encode()).hexdigest()[:16]}.cu"
    path = workdir / name
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    cubin = path.with_suffix(".cubin")
    options = (f"-arch={arch}", "-std=c++17", "-cubin", "-Xptxas", "-v", *flags)
    start = time.perf_counter()
    try:
        run = subprocess.run(["nvcc", *options, "-o", str(cubin), str(path)], capture_output=True, text=True,
                             timeout=timeout)
        returncode, log = run.returncode, run.stdout + run.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, log = -1, f"nvcc timed out after {timeout} s\n{exc.stdout or ''}{exc.stderr or ''}"
    seconds = time.perf_counter() - start
    ok = returncode == 0
    result = CompileResult(
        tool="nvcc", ok=ok, log=log, source=source, options=options,
        resources=parse_ptxas(log, demangle=False) if ok else {},
        cubin=cubin.read_bytes() if ok and cubin.exists() else b"", path=path, seconds=seconds,
    )
    return result.check() if check else result


# --------------------------------------------------------------------------- NVRTC
_compilers: dict[str, Compiler] = {}
_lock = threading.Lock()


@functools.cache
def nvrtc_available() -> bool:
    """Whether NVRTC loads through CuPy (it needs no GPU)."""
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
    except Exception:  # ImportError, or libnvrtc missing
        return False
    return True


def nvrtc_compiler(arch: str = "sm_90") -> Compiler:
    """One ``Compiler`` per architecture for the whole test session (it caches by source)."""
    with _lock:
        if arch not in _compilers:
            _compilers[arch] = Compiler(arch)
        return _compilers[arch]


def compile_nvrtc(source: str, names: Sequence[str], *, flags: Sequence[str] = (), arch: str = "sm_90",
                  check: bool = True) -> CompileResult:
    """NVRTC through ``hfuse.runtime.compile.Compiler`` (the options ``hfuse tune`` uses, plus ``flags``)."""
    compiler = nvrtc_compiler(arch)
    start = time.perf_counter()
    try:
        binary = compiler.compile(source, list(names), options=tuple(flags))
    except CompileError as err:
        result = CompileResult(tool="nvrtc", ok=False, log=err.log, source=source, options=err.options,
                               seconds=time.perf_counter() - start)
        return result.check() if check else result
    return CompileResult(
        tool="nvrtc", ok=True, log=binary.log, source=source, options=binary.options, resources=dict(binary.ptxas),
        lowered=dict(binary.lowered), cubin=binary.cubin, seconds=time.perf_counter() - start,
    )
