"""A compiled kernel loaded into a CUDA module, and launching it.

``Compiler.load`` (``runtime/compile.py``) makes a ``CompiledKernel`` from a binary; it
launches through CuPy, or packs its parameters for a direct driver launch
(``runtime/param_buffer.py``), and writes its module's ``__constant__``/``__device__``
symbols (``runtime/symbols.py``).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..launch import check_symbols
from ..spec import Dim3
from .binary import DEFAULT_SMEM_LIMIT, CompiledBinary, KernelResources, LaunchError, PtxParam
from .param_buffer import ParamBuffer
from .ptxas import find_resources
from .symbols import write_symbols


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
