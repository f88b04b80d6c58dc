"""Compiling CUDA source with NVRTC (through CuPy), or nvcc where NVRTC cannot read a
kept header (``nvcc_runner``), and loading it for launch.

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

import functools
import hashlib
import re
import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import nvcc_runner
from .binary import CompileError, CompiledBinary, CompileJob, CompileRunner, LaunchError, Toolchain, source_hash
from .device import DeviceLimits, require_gpu
from .loaded import CompiledKernel
from .ptxas import parse_ptxas
from .. import toolkit
from ..codegen.includes import classify
from ..frontend.preprocess import library_header_dirs
from ..toolkit import cuda_include_dirs

if TYPE_CHECKING:
    from ..frontend.options import CompileOptions
    from .binary_cache import BinaryCache

_REPORTING = "-Xptxas=-v"
"""Asks ptxas for its report (registers, spills, stack) in the program log."""
_REPORT_REFUSED = re.compile(r"(unrecogni[sz]ed|unknown|invalid|unsupported)[^\n]*(-Xptxas|ptxas-options)", re.I)
"""An NVRTC's words for an option it does not know (only then is the report given up)."""
_PROBE = 'extern "C" __global__ void hfuse_probe(int* p) { p[0] = 1; }\n'


def run_compile_job(job: CompileJob) -> CompiledBinary:
    """``job`` through its toolchain, in this process."""
    return nvcc_runner.run_nvcc(job) if job.toolchain == "nvcc" else run_nvrtc(job)


def toolchain_for(sources: Sequence[str], options: CompileOptions | None = None) -> tuple[Toolchain, str | None]:
    """NVRTC, unless one of ``sources`` keeps a header NVRTC cannot read, so that such sources
    compile with nvcc: one of PyTorch's (``#include <torch/extension.h>``, ``<ATen/...>``,
    ``<c10/...>``, found in the folders a PyTorch extension's build adds), or an installed
    library's (``options``' library folders) or a toolkit header hfuse does not know
    (``<thrust/complex.h>``), or one found in an ``-I`` folder (GLM in a ``third_party/``
    folder), that NVRTC cannot open a header of (``<cmath>``, ``<cuda.h>``:
    NVRTC has no host C++ library). NVRTC itself is asked, on the kept lines alone, since only
    the preprocessor knows which includes a library's conditions keep (CUTLASS includes
    ``<ciso646>`` only for MSVC). The second value says why, for the user."""
    dirs = [d for d in toolkit.pytorch_include_dirs() if (d / "torch").is_dir() or (d / "ATen").is_dir()]
    # a kept header found in a plain -I folder is a library's too (hfuse expands the user's own
    # headers): a third_party/ folder the front end recognised in options made for its inputs
    # (CompileOptions.for_inputs), which the tuner's options are not
    libraries = [d for d in library_header_dirs(options) if d not in dirs] if options is not None else []
    plain = [d for d in dict.fromkeys(Path(d).resolve() for d in options.include_dirs if Path(d).is_dir())
             if d not in libraries and d not in dirs] if options is not None else []
    toolkit_dirs = [Path(d) for d in cuda_include_dirs(import_cupy=False)]
    kept: list[str] = []
    for source in sources:
        for header in nvrtc_includes(source):
            if any((d / header).is_file() for d in dirs):
                return "nvcc", f"it keeps PyTorch's <{header}>, which NVRTC cannot read (it has no host C++ library)"
            if any((d / header).is_file() for d in libraries) or classify(header) == "unknown" and any(
                    (d / header).is_file() for d in [*toolkit_dirs, *plain]):
                kept.append(header)
        if dirs and (named := _pytorch_name(source)) is not None:
            # (hfuse keeps PyTorch's headers from NVRTC; a kernel of c10::Half, as vLLM's, needs them)
            return "nvcc", (f"its device code names PyTorch's {named}, whose headers NVRTC cannot read (they need "
                            "the host C++ library)")
    if kept:
        flags = [f"-std={options.emitted_std}" if options is not None else "-std=c++17",
                 *(options.compiler_flags(std=False, pre_includes=False, compiler="nvrtc") if options else ()),
                 *(f"-I{d}" for d in [*libraries, *plain, *toolkit_dirs])]
        for header in dict.fromkeys(kept):
            if (missing := _nvrtc_cannot_open(header, tuple(flags))) is not None:
                return "nvcc", (f"it keeps <{header}>, which NVRTC cannot read: it cannot open <{missing}> "
                                "(NVRTC has no host C++ library)")
    return "nvrtc", None


@functools.lru_cache(maxsize=64)
def _nvrtc_cannot_open(header: str, flags: tuple[str, ...]) -> str | None:
    """The header NVRTC cannot open when a file includes ``header`` (from its log), or None:
    it reads it, it fails for another reason (the compile says so later), or NVRTC is not here."""
    try:
        run_nvrtc(CompileJob(f"#include <{header}>\n", (), flags))
    except CompileError as exc:
        found = re.search(r'cannot open source file "([^"]+)"', exc.log or "")
        return found.group(1) if found else None
    except Exception:  # (no CuPy or no libnvrtc: nothing to ask)
        return None
    return None


_PYTORCH_NAME = re.compile(r"\b(?:c10|at|torch)::\w+")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _pytorch_name(source: str) -> str | None:
    """A name of PyTorch's namespaces (``c10::Half``) in what NVRTC reads of ``source``, its
    comments aside."""
    found = _PYTORCH_NAME.search(_COMMENT.sub(" ", "\n".join(nvrtc_lines(source))))
    return found.group() if found else None


def nvrtc_includes(source: str) -> list[str]:
    """The headers ``source`` includes outside the ``#ifndef __CUDACC_RTC__`` blocks hfuse
    writes around what NVRTC must not read."""
    return [header.group(1) for line in nvrtc_lines(source) if (directive := _DIRECTIVE.match(line))
            and directive.group(1) == "include" and (header := _HEADER.match(directive.group(2).strip().replace(" ", "")))]


def nvrtc_lines(source: str) -> list[str]:
    """The lines of ``source`` NVRTC reads: all but those of the ``#ifndef __CUDACC_RTC__``
    blocks (and the ``#else`` of ``#ifdef __CUDACC_RTC__``) hfuse writes."""
    found: list[str] = []
    opened: list[bool | None] = []
    """Per open #if: whether it asks 'NVRTC?' (True), 'not NVRTC?' (False), or something else."""
    hidden: list[bool] = []
    """Per open #if: whether its current branch is hidden from NVRTC."""
    for line in source.splitlines():
        directive = _DIRECTIVE.match(line)
        if directive is None:
            if not any(hidden):
                found.append(line)
            continue
        word, rest = directive.group(1), directive.group(2).strip().replace(" ", "")
        if word in ("if", "ifdef", "ifndef"):
            asks = {("ifdef", "__CUDACC_RTC__"): True, ("if", "defined(__CUDACC_RTC__)"): True,
                    ("ifndef", "__CUDACC_RTC__"): False, ("if", "!defined(__CUDACC_RTC__)"): False}.get((word, rest))
            opened.append(asks)
            hidden.append(asks is False)
        elif word == "else" and hidden:
            hidden[-1] = opened[-1] is True
        elif word == "endif" and hidden:
            opened.pop()
            hidden.pop()
        elif not any(hidden):
            found.append(line)
    return found


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)(.*?)(?://.*)?$")
_HEADER = re.compile(r'[<"]([^>"]+)[>"]')


def nvrtc_version() -> tuple[int, ...]:
    """This NVRTC's version (it decides the code, so it keys what is cached)."""
    from cupy.cuda import nvrtc

    return tuple(nvrtc.getVersion())


def run_nvrtc(job: CompileJob) -> CompiledBinary:
    """NVRTC in this process: source -> cubin, lowered names, PTX and the log."""
    if job.toolchain != "nvrtc":
        raise ValueError(f"run_nvrtc was handed a job for {job.toolchain} (run_compile_job runs either)")
    from cupy.cuda import nvrtc  # CuPy loads libnvrtc lazily

    prog = nvrtc.createProgram(job.source, "hfuse_kernel.cu", [], [])
    try:
        for n in job.names:
            nvrtc.addNameExpression(prog, n)
        try:
            nvrtc.compileProgram(prog, list(job.options))
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise CompileError(f"NVRTC could not compile {', '.join(job.names) or 'the source'} ({exc})", log,
                               job.options)
        log = nvrtc.getProgramLog(prog)
        cubin = nvrtc.getCUBIN(prog)
        try:
            ptx = nvrtc.getPTX(prog)
            ptx = ptx.decode(errors="replace") if isinstance(ptx, bytes) else str(ptx)
        except Exception:  # some NVRTC versions keep no PTX when asked for SASS
            ptx = ""
        lowered = {n: nvrtc.getLoweredName(prog, n) for n in job.names}
    finally:
        nvrtc.destroyProgram(prog)
    return CompiledBinary(
        key=hashlib.sha256(cubin).hexdigest(),
        cubin=cubin,
        lowered=lowered,
        log=log,
        options=job.options,
        ptx=ptx,
        ptxas=parse_ptxas(log, demangle=False),
    )


class Compiler:
    """NVRTC compiler with a per-object cache. One per process (or per tuning run).

    ``arch`` defaults to the current device's (``sm_90`` on an H100); give it explicitly
    to compile without a GPU. ``verbose_ptxas`` adds ``-Xptxas -v`` so the log has the
    spill split; it is dropped only if this NVRTC says it does not know the option. ``cache`` keeps
    every binary compiled on disk too (give one only for sources whose user headers are
    inlined: see ``binary_cache``). ``runner`` runs NVRTC elsewhere (a pool of processes,
    Ray tasks: ``compile_pool``); the caches and the checks of ptxas's report stay here.
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
        runner: CompileRunner | None = None,
        toolchain: Toolchain = "nvrtc",
    ):
        self._limits = limits
        self._arch = arch or (limits.arch if limits else None)
        self.std = std
        self.toolchain: Toolchain = toolchain
        # nvcc finds its toolkit's headers itself (the pip packages' copies must not come first)
        self.include_dirs = (list(include_dirs) if include_dirs is not None
                             else cuda_include_dirs() if toolchain == "nvrtc" else [])
        self.extra_options = tuple(options)
        self.verbose_ptxas = verbose_ptxas
        self.cache = cache
        self.runner: CompileRunner = runner or run_compile_job
        self._binaries: dict[tuple, CompiledBinary] = {}
        self._kernels: dict[tuple[str, str, str], CompiledKernel] = {}
        self._symbols_written: dict[tuple[str, str], dict[str, str]] = {}
        """Per loaded module (binary key, instance): what ``set_symbols`` last copied there."""
        self._lock = threading.Lock()
        self._nvrtc_version: tuple[int, int] | None = None
        self._reports: bool | None = None
        """Whether this NVRTC writes ptxas's report when asked (None: not probed yet)."""
        self._tmp: str | None = None
        """Where loaded binaries are written for CuPy; made at the first load (only a GPU needs it)."""

    @classmethod
    def for_sources(cls, options: CompileOptions, sources: Sequence[str], *, more: Sequence[str] = (),
                    **settings: Any) -> "Compiler":
        """A compiler for ``sources`` (fused or device sides, whose ``-include`` files are
        inlined already) under the user's ``options``: NVRTC, or nvcc where a source keeps a
        header NVRTC cannot read (``toolchain_for``); ``more``: flags both take (``-I``);
        ``settings`` as ``Compiler`` takes them."""
        toolchain, _ = toolchain_for(sources, options)
        return cls(std=options.emitted_std, toolchain=toolchain, **settings,
                   options=[*options.compiler_flags(std=False, pre_includes=False, compiler=toolchain), *more])

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
        # -default-device: what NVRTC compiles is device code (hfuse emits no host function), and
        # without it NVRTC takes a generic lambda's call operator in a __device__ function, and a
        # constexpr function without an execution space, for host code (nvcc does not)
        opts = [f"-arch={self.arch}", f"-std={self.std}"] + (["-default-device"] if self.toolchain == "nvrtc" else [])
        if self.verbose_ptxas:
            opts.append(_REPORTING)
        # the toolkit's folders after the user's, as nvcc searches them: a library's own copy of
        # a toolkit header given with -I (FlashInfer's newer CCCL, whose cuda::fast_mod_div the
        # toolkit's lacks) is the one both compilers read
        return tuple(opts) + self.extra_options + tuple(extra) + tuple(f"-I{d}" for d in self.include_dirs)

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
        binary = None
        if self.cache is not None:
            stored_as = self.cache.key(source, opts, names, self.toolchain_version(), self.toolchain)
            binary = self.cache.get(stored_as)
            if binary is not None and _REPORTING in opts and binary.missing_reports(names):
                binary = None  # an entry without the report it was compiled for: never trusted
        if binary is None:
            binary = self._compile_reporting(source, names, opts)
            if stored_as is not None and (_REPORTING not in binary.options or not binary.missing_reports(names)):
                self.cache.put(stored_as, binary)
        with self._lock:
            self._binaries[key] = binary
        return binary

    def _compile_reporting(self, source: str, names: Sequence[str], opts: tuple[str, ...]) -> CompiledBinary:
        """NVRTC with ptxas's report for every kernel asked for, or a ``CompileError``.

        A missing report is never a silent default. An NVRTC that refuses the report's
        option compiles without it, and one that accepts it but never writes a report
        (seen: CUDA 13.2's) is found once by a probe; with either, spills are unknown
        (``None``) for every kernel. Any other failure is the source's. With an NVRTC that
        reports, a compile whose log lacks a kernel's report is tried once more (seen
        under many concurrent compiles), then refused."""
        try:
            binary = self._run_nvrtc(source, names, opts)
        except CompileError as err:
            if _REPORTING not in opts or not _REPORT_REFUSED.search(err.log):
                raise
            self.verbose_ptxas = False
            return self._run_nvrtc(source, names, tuple(o for o in opts if o != _REPORTING))
        if _REPORTING in opts and binary.missing_reports(names) and self._nvrtc_reports(opts):
            binary = self._run_nvrtc(source, names, opts)
            if missing := binary.missing_reports(names):
                raise CompileError(f"NVRTC compiled {', '.join(missing)} but its log has no ptxas report for "
                                   "it (registers and spills are read from it); compile again", binary.log, opts)
        return binary

    def _nvrtc_reports(self, opts: tuple[str, ...]) -> bool:
        """Whether this NVRTC writes ptxas's report when asked (a probe, once per compiler)."""
        if self._reports is None:
            probe = self._run_nvrtc(_PROBE, ["hfuse_probe"], opts)
            self._reports = not probe.missing_reports(["hfuse_probe"])
        return self._reports

    def _run_nvrtc(self, source: str, names: Sequence[str], opts: tuple[str, ...]) -> CompiledBinary:
        if self.toolchain == "nvrtc":
            self._nvrtc()
        return self.runner(CompileJob(source, tuple(names), tuple(opts), self.toolchain))

    def toolchain_version(self) -> tuple[int, ...]:
        """The compiler's release: it decides the code, so it keys what is cached."""
        if self.toolchain == "nvcc":
            return nvcc_runner.nvcc_version()
        self._nvrtc()
        assert self._nvrtc_version is not None
        return self._nvrtc_version

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
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="hfuse-cubin-")
            weakref.finalize(self, shutil.rmtree, self._tmp, True)
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
