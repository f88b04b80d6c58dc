"""Compiling CUDA source with NVRTC (through CuPy) and loading it for launch.

Two stages, on purpose:

1. ``Compiler.compile`` runs NVRTC only: source -> cubin, lowered (mangled) names, PTX
   and the compiler log. NVRTC needs no CUDA context and releases the GIL (CuPy's
   wrapper calls it ``nogil``), so the tuner can call it from a thread pool while the
   GPU measures another candidate. Results are cached per (source hash, options, names)
   in the ``Compiler`` object (one per process or per tuning run; no global state) and,
   when it is given a ``BinaryCache``, on disk across runs and processes.
2. ``Compiler.load`` turns a cubin into a launchable ``CompiledKernel``. It loads a CUDA
   module (``cuModuleLoad``), which needs the device's context current on the calling
   thread; CuPy sets that up per thread lazily, but to keep the timing loop free of
   surprises we load and launch only from the main (timing) thread. ``Compiler.get``
   does both stages in the calling thread.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import HFuseError
from ..spec import Dim3
from .device import DeviceLimits, require_gpu
from .ptxas import Resources, find_resources, parse_ptxas

if TYPE_CHECKING:  # binary_cache imports this module for CompiledBinary
    from .binary_cache import BinaryCache

DEFAULT_SMEM_LIMIT = 48 * 1024


class CompileError(HFuseError):
    """NVRTC rejected a source; ``log`` is the full compiler log."""

    def __init__(self, message: str, log: str, options: Sequence[str] = ()):
        self.log = log
        self.options = tuple(options)
        super().__init__(message, hint="NVRTC log:\n" + (log.strip()[-6000:] or "(empty)"))


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


class CompiledKernel:
    """A loaded kernel: resources, parameters and a launch method."""

    def __init__(self, name: str, symbol: str, raw: Any, binary: CompiledBinary, smem_limit: int,
                 module: Any = None, symbols_written: dict[str, str] | None = None):
        self.name = name
        self.symbol = symbol
        self.raw = raw  # cupy.RawKernel
        self.binary = binary
        self.module = module  # the cupy.RawModule ``raw`` came from: its variables
        self._symbols_written = symbols_written if symbols_written is not None else {}
        """What ``set_symbols`` last copied into the module, per symbol (shared by its kernels)."""
        self._smem_limit = smem_limit
        self._dynamic_smem_set = 0
        ptx = find_resources(binary.ptxas, symbol)
        self.resources = KernelResources(
            registers=int(raw.num_regs),
            local_bytes=int(raw.local_size_bytes),
            static_smem=int(raw.shared_size_bytes),
            const_bytes=int(raw.const_size_bytes),
            max_threads_per_block=int(raw.max_threads_per_block),
            binary_version=int(raw.binary_version),
            spill_stores=ptx.spill_stores if ptx else None,
            spill_loads=ptx.spill_loads if ptx else None,
            stack_frame=ptx.stack_frame if ptx else None,
        )

    @property
    def params(self) -> list[PtxParam] | None:
        return self.binary.params(self.name)

    @property
    def direct_launch(self) -> bool:
        """Whether ``bind(..., direct=True)`` launches through the driver with packed
        arguments (Python ints accepted for integer parameters), not CuPy's path."""
        from .param_buffer import ParamBuffer

        return getattr(getattr(self.raw, "kernel", None), "ptr", None) is not None and ParamBuffer.packable(self.params)

    def set_symbols(self, symbols: Mapping[str, Any], *, label: str | None = None, force: bool = False) -> list[str]:
        """Copies data into the module's ``__constant__``/``__device__`` variables, by the
        names the source spells (``KernelLaunch.symbols``); returns the names copied.

        Each name is looked up by its lowered name (compile with ``&name`` among the
        names: ``runtime.symbols.compile_with_symbols``) and its data must have exactly the
        variable's size; a symbol the module lacks or data of another size is a
        ``SymbolError`` naming both, raised before anything is copied. Unchanged data is
        not copied again unless ``force``. Synchronises the device when it copies.
        ``label`` names the kernel in errors (default: its name).
        """
        from ..launch import check_symbols
        from .symbols import write_symbols

        label = label or self.name
        symbols = check_symbols(symbols, label)
        if not symbols:
            return []
        if self.module is None:
            raise LaunchError(f"kernel '{label}' was loaded without its module; its symbols cannot be set")
        return write_symbols(self.module, self.binary, symbols, label, self._symbols_written, force=force)

    def allow_dynamic_smem(self, shared_mem: int) -> None:
        """Opts in to more than 48 KiB of dynamic shared memory (cuFuncSetAttribute).

        Call it before capturing a graph: it is not a stream operation.
        """
        if shared_mem > DEFAULT_SMEM_LIMIT - self.resources.static_smem and shared_mem > self._dynamic_smem_set:
            if shared_mem + self.resources.static_smem > self._smem_limit:
                raise LaunchError(
                    f"kernel '{self.name}' needs {shared_mem} B dynamic + {self.resources.static_smem} B static "
                    f"shared memory; the device allows {self._smem_limit} B per block"
                )
            self.raw.max_dynamic_shared_size_bytes = int(shared_mem)
            self._dynamic_smem_set = shared_mem

    def bind(self, grid: Dim3, block: Dim3, shared_mem: int = 0, *, tail: Sequence[Any] = (),
             direct: bool = False) -> "BoundLaunch":
        """A launch of this kernel at one shape, checked once (block size against the
        registers, shared memory opted in): calling it costs only the launch itself.

        ``tail``: arguments that follow every call's own (a fused kernel's hidden words).
        ``direct``: pack the arguments by the PTX parameter list and launch through the
        driver (``runtime.param_buffer``), a few microseconds less per call than CuPy's
        argument handling; for launchers called from one thread.
        """
        self.allow_dynamic_smem(shared_mem)
        grid, block = Dim3.of(grid), Dim3.of(block)
        if block.size > self.resources.max_threads_per_block:
            raise LaunchError(
                f"kernel '{self.name}' launched with {block.size} threads per block; its registers allow at most "
                f"{self.resources.max_threads_per_block}"
            )
        return BoundLaunch(self, grid, block, int(shared_mem), tuple(tail), direct)

    def launch(self, grid: Dim3, block: Dim3, args: Sequence[Any], shared_mem: int = 0, stream: Any = None) -> None:
        """Launches on ``stream`` (default: CuPy's current stream). Asynchronous."""
        self.bind(grid, block, shared_mem)(args, stream)


class BoundLaunch:
    """``CompiledKernel.bind``: one kernel at one grid, block and dynamic shared memory size."""

    def __init__(self, kernel: CompiledKernel, grid: Dim3, block: Dim3, shared_mem: int, tail: tuple = (),
                 direct: bool = False):
        from .param_buffer import ParamBuffer

        self.kernel, self.grid, self.block, self.shared_mem, self.tail = kernel, grid, block, shared_mem, tail
        self._grid, self._block, self._raw = grid.as_tuple(), block.as_tuple(), kernel.raw
        self._params = ParamBuffer.for_params(kernel.params, tail) if direct and kernel.direct_launch else None
        if self._params is not None:
            from cupy.cuda import driver, get_current_stream

            self._function, self._launch_kernel = int(kernel.raw.kernel.ptr), driver.launchKernel
            self._current_stream = get_current_stream

    def __call__(self, args: Sequence[Any], stream: Any = None) -> None:
        """Launches with ``args`` (then ``tail``) on ``stream`` (default: CuPy's current stream). Asynchronous."""
        try:
            if self._params is not None:
                handle = (stream or self._current_stream()).ptr
                self._launch_kernel(self._function, *self._grid, *self._block, self.shared_mem, handle,
                                    self._params.pack(args), 0)
            elif stream is None:
                self._raw(self._grid, self._block, (*args, *self.tail), shared_mem=self.shared_mem)
            else:
                with stream:  # RawKernel launches on the current stream
                    self._raw(self._grid, self._block, (*args, *self.tail), shared_mem=self.shared_mem)
        except Exception as exc:
            raise LaunchError(
                f"launching kernel '{self.kernel.name}' (grid {self.grid}, block {self.block}, {self.shared_mem} B "
                f"dynamic smem) failed: {type(exc).__name__}: {exc}"
            ) from exc


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


def cuda_include_dirs() -> list[str]:
    """Folders holding the CUDA headers NVRTC may need (cooperative_groups.h, ...).

    NVRTC ships only a few built-in headers. We look, in order, at $CUDA_PATH,
    $CUDA_HOME, the toolkit CuPy found, the folder of nvcc, /usr/local/cuda, and the
    pip packages that carry headers (nvidia/cu13/include, nvidia/cuda_runtime/include;
    ``curand_kernel.h`` comes from nvidia-curand where the toolkit has no cuRAND).
    """
    roots: list[Path] = []
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            roots.append(Path(os.environ[env]))
    try:
        import cupy

        path = cupy.cuda.get_cuda_path()
        if path:
            roots.append(Path(path))
    except Exception:
        pass
    if nvcc := shutil.which("nvcc"):
        roots.append(Path(nvcc).resolve().parent.parent)
    roots.append(Path("/usr/local/cuda"))
    candidates = [r / "include" for r in roots]
    for site in sys.path:
        nvidia = Path(site) / "nvidia"
        if nvidia.is_dir():
            candidates.extend(sorted(nvidia.glob("*/include")))
    found: list[str] = []
    for c in candidates:
        # pip's nvidia/cu13/include may hold only cuRAND's headers (nvidia-curand).
        if any((c / h).is_file() for h in ("cooperative_groups.h", "cuda_runtime.h", "curand_kernel.h")):
            # CUDA 13 moved libcu++ (<cuda/std/...>, used by cooperative_groups.h) to include/cccl.
            for d in (c, c / "cccl"):
                text = str(d.resolve())
                if d.is_dir() and text not in found:
                    found.append(text)
    return found


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


class Compiler:
    """NVRTC compiler with a per-object cache. One per process (or per tuning run).

    ``arch`` defaults to the current device's (``sm_90`` on an H100); give it explicitly
    to compile without a GPU. ``verbose_ptxas`` adds ``-Xptxas -v`` so the log has the
    spill split; it is dropped automatically if this NVRTC refuses it. ``cache`` keeps
    every binary compiled on disk too (give one only for sources whose user headers are
    inlined: see ``binary_cache``).
    """

    def __init__(
        self,
        arch: str | None = None,
        *,
        limits: DeviceLimits | None = None,
        std: str = "c++17",
        include_dirs: Sequence[str] | None = None,
        options: Sequence[str] = (),
        verbose_ptxas: bool = True,
        cache: BinaryCache | None = None,
    ):
        self._limits = limits
        self._arch = arch or (limits.arch if limits else None)
        self.std = std
        self.include_dirs = list(include_dirs) if include_dirs is not None else cuda_include_dirs()
        self.extra_options = tuple(options)
        self.verbose_ptxas = verbose_ptxas
        self.cache = cache
        self._binaries: dict[tuple, CompiledBinary] = {}
        self._kernels: dict[tuple[str, str, str], CompiledKernel] = {}
        self._symbols_written: dict[tuple[str, str], dict[str, str]] = {}
        """Per loaded module (binary key, instance): what ``set_symbols`` last copied there."""
        self._lock = threading.Lock()
        self._nvrtc_version: tuple[int, int] | None = None
        self._tmp = tempfile.mkdtemp(prefix="hfuse-cubin-")
        weakref.finalize(self, shutil.rmtree, self._tmp, True)

    @property
    def limits(self) -> DeviceLimits:
        if self._limits is None:
            self._limits = DeviceLimits.current()
        return self._limits

    @property
    def arch(self) -> str:
        if self._arch is None:
            self._arch = self.limits.arch
        return self._arch

    def options(self, extra: Sequence[str] = ()) -> tuple[str, ...]:
        opts = [f"-arch={self.arch}", f"-std={self.std}"]
        opts += [f"-I{d}" for d in self.include_dirs]
        if self.verbose_ptxas:
            opts.append("-Xptxas=-v")
        return tuple(opts) + self.extra_options + tuple(extra)

    def _nvrtc(self) -> Any:
        from cupy.cuda import nvrtc  # CuPy loads libnvrtc lazily; do it once, under the lock

        with self._lock:
            if self._nvrtc_version is None:
                self._nvrtc_version = tuple(nvrtc.getVersion())
        return nvrtc

    def compile(self, source: str, names: Sequence[str], *, options: Sequence[str] = ()) -> CompiledBinary:
        """NVRTC only (thread-safe, no CUDA context). Raises ``CompileError`` with the log."""
        opts = self.options(options)
        key = (source_hash(source), opts, tuple(names))
        with self._lock:
            if key in self._binaries:
                return self._binaries[key]
        stored_as = None
        if self.cache is not None:
            self._nvrtc()
            stored_as = self.cache.key(source, opts, names, self._nvrtc_version)
            binary = self.cache.get(stored_as)
        if stored_as is None or binary is None:
            try:
                binary = self._run_nvrtc(source, names, opts)
            except CompileError as err:
                if not (self.verbose_ptxas and "-Xptxas" in err.log):
                    raise
                # An NVRTC that does not know -Xptxas: compile without the spill report.
                binary = self._run_nvrtc(source, names, tuple(o for o in opts if not o.startswith("-Xptxas")))
            if stored_as is not None:
                self.cache.put(stored_as, binary)
        with self._lock:
            self._binaries[key] = binary
        return binary

    def _run_nvrtc(self, source: str, names: Sequence[str], opts: tuple[str, ...]) -> CompiledBinary:
        nvrtc = self._nvrtc()
        prog = nvrtc.createProgram(source, "hfuse_kernel.cu", [], [])
        try:
            for n in names:
                nvrtc.addNameExpression(prog, n)
            try:
                nvrtc.compileProgram(prog, list(opts))
            except nvrtc.NVRTCError as exc:
                log = nvrtc.getProgramLog(prog)
                raise CompileError(f"NVRTC could not compile {', '.join(names) or 'the source'} ({exc})", log, opts)
            log = nvrtc.getProgramLog(prog)
            cubin = nvrtc.getCUBIN(prog)
            try:
                ptx = nvrtc.getPTX(prog)
                ptx = ptx.decode(errors="replace") if isinstance(ptx, bytes) else str(ptx)
            except Exception:  # some NVRTC versions keep no PTX when asked for SASS
                ptx = ""
            lowered = {n: nvrtc.getLoweredName(prog, n) for n in names}
        finally:
            nvrtc.destroyProgram(prog)
        return CompiledBinary(
            key=hashlib.sha256(cubin).hexdigest(),
            cubin=cubin,
            lowered=lowered,
            log=log,
            options=opts,
            ptx=ptx,
            ptxas=parse_ptxas(log, demangle=False),
        )

    def load(self, binary: CompiledBinary, name: str, *, instance: str = "") -> CompiledKernel:
        """Loads ``name`` from a compiled binary. Call from the main (launching) thread.

        Kernels loaded from one binary share one module, and so its ``__constant__`` and
        ``__device__`` variables; a different ``instance`` (letters, digits, ``-_.``) loads
        a module of its own, for different symbol data (``runtime.symbols``).
        """
        if not re.fullmatch(r"[\w.-]*", instance):
            raise ValueError(f"module instance {instance!r} must be letters, digits, '-', '_' or '.'")
        cache_key = (binary.key, name, instance)
        if cache_key in self._kernels:
            return self._kernels[cache_key]
        cupy = require_gpu()
        # The path names the content (and the instance), so CuPy's per-path module memo
        # can never serve a stale module, or another instance's, for it.
        path = Path(self._tmp) / (f"{binary.key}-{instance}.cubin" if instance else f"{binary.key}.cubin")
        if not path.exists():
            path.write_bytes(binary.cubin)
        symbol = binary.symbol(name)
        try:
            module = cupy.RawModule(path=str(path))
            raw = module.get_function(symbol)
        except Exception as exc:
            raise LaunchError(f"loading kernel '{name}' (symbol {symbol}) failed: {type(exc).__name__}: {exc}") from exc
        written = self._symbols_written.setdefault((binary.key, instance), {})
        kernel = CompiledKernel(name, symbol, raw, binary, smem_limit=self.limits.smem_per_block_optin,
                                module=module, symbols_written=written)
        self._kernels[cache_key] = kernel
        return kernel

    def get(self, source: str, name: str, *, options: Sequence[str] = ()) -> CompiledKernel:
        """Compiles (cached) and loads one kernel in the calling thread."""
        return self.load(self.compile(source, [name], options=options), name)
