"""How one kernel is launched on real data: the tuner's and the benchmarks' input.

A ``KernelLaunch`` is Kernel Tuner's idea of a kernel description in one object: the
kernel (``KernelSpec``), how its grid follows from its block (a tunable kernel that
changes its block size must still cover the same work), its arguments, its dynamic
shared memory, and which arguments are outputs and how to compare them.

Arguments are CuPy arrays (device memory) or NumPy scalars (``np.int32(5)``,
``np.float32(0.5)``): the scalar's dtype is the C type the kernel receives. Nothing
here imports CuPy, so it can be built and inspected on a machine without a GPU.

``symbols`` fills the kernel's ``__constant__`` and ``__device__`` variables, as the host
would with ``cudaMemcpyToSymbol``: by the name the source spells (``"coeffs"``, or
``"mylib::filter"`` for one in a namespace), data as a NumPy array or scalar, ``bytes``,
or a CuPy array, exactly as many bytes as the variable has. The runtime copies it into
every module that holds the kernel (the original's, each fused candidate's, the plan
launcher's) before a kernel of that module runs.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from .errors import HFuseError, Location
from .spec import Dim3, KernelSpec

Compare = Literal["exact", "unordered", "close"]


@dataclass(frozen=True)
class Output:
    """An argument the kernel writes.

    ``exact``: bit-equal; ``unordered``: equal as multisets (results appended by
    atomics, such as a miner's list of found nonces); ``close``: within ``rtol``/``atol``
    (only where the arithmetic really is order-dependent, e.g. float atomics).
    """

    index: int
    compare: Compare = "exact"
    rtol: float = 0.0
    atol: float = 0.0


GridRule = Callable[[Dim3], Dim3]
SmemRule = Callable[[Dim3], int]


@dataclass
class KernelLaunch:
    """One kernel, its inputs, and how to launch it for a given block shape.

    ``grid`` is either a fixed ``Dim3`` (for kernels whose grid is free, e.g. grid-stride
    loops: the tuner may then also change it, see ``grid_free``) or a function from the
    block shape to the grid. ``dynamic_smem`` likewise is bytes or a function of the block.
    """

    kernel: KernelSpec
    args: Sequence[Any]
    outputs: Sequence[Output]
    grid: Dim3 | GridRule
    dynamic_smem: int | SmemRule = 0
    grid_free: bool = False
    label: str = ""
    source: str | None = field(default=None, repr=False)
    """CUDA text of the kernel's file when it is not on disk (tests); else read from kernel.file."""
    symbols: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """Data for ``__constant__``/``__device__`` variables by the source's name (see the module doc)."""

    def __post_init__(self) -> None:
        self.symbols = check_symbols(self.symbols, self.label or getattr(self.kernel, "name", None))

    def grid_for(self, block: Dim3 | None = None) -> Dim3:
        block = block or self.kernel.block
        return self.grid(block) if callable(self.grid) else Dim3.of(self.grid)

    def smem_for(self, block: Dim3 | None = None) -> int:
        block = block or self.kernel.block
        return int(self.dynamic_smem(block)) if callable(self.dynamic_smem) else int(self.dynamic_smem)

    def with_block(self, block: Dim3 | int | str | tuple[int, ...]) -> "KernelLaunch":
        return replace(self, kernel=self.kernel.with_block(block))

    def with_grid(self, grid: Dim3 | GridRule) -> "KernelLaunch":
        return replace(self, grid=grid)

    @property
    def name(self) -> str:
        return self.label or self.kernel.name


# -- data for __constant__ / __device__ symbols ---------------------------------------

_SYMBOL_NAME = re.compile(r"(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def is_device_array(value: Any) -> bool:
    """A CuPy array (or anything with CuPy's ``data.ptr``, ``dtype`` and ``nbytes``)."""
    data = getattr(value, "data", None)
    return (not isinstance(value, np.ndarray) and hasattr(data, "ptr") and hasattr(value, "dtype")
            and hasattr(value, "nbytes"))


def check_symbols(symbols: Mapping[str, Any] | None, kernel: str | None = None) -> dict[str, Any]:
    """``symbols`` validated, as a new dict under normalised names (no leading ``::``).

    Names must be C++ identifiers, optionally qualified (``mylib::filter``). Values must be
    NumPy arrays or scalars, ``bytes``/``bytearray``/``memoryview`` or CuPy arrays, not
    empty; Python numbers are refused because their C type is ambiguous.
    """
    where = Location(kernel=kernel)
    if symbols is None:
        return {}
    if not isinstance(symbols, Mapping):
        raise HFuseError(
            f"symbols must be a mapping from symbol name to data, not {type(symbols).__name__}", where,
            hint='e.g. symbols={"coeffs": np.arange(16, dtype=np.float32)}',
        )
    out: dict[str, Any] = {}
    for name, value in symbols.items():
        if not isinstance(name, str) or not _SYMBOL_NAME.fullmatch(name):
            raise HFuseError(
                f"symbol name {name!r} is not a C++ name", where,
                hint="give the __constant__/__device__ variable's name as the source spells it, "
                'e.g. "coeffs" or "mylib::filter" (no "&", no indexing)',
            )
        key = name[2:] if name.startswith("::") else name
        if key in out:
            raise HFuseError(f"symbol '{key}' is given twice (as '{key}' and '::{key}')", where)
        _check_symbol_value(key, value, where)
        out[key] = value
    return out


def _check_symbol_value(name: str, value: Any, where: Location) -> None:
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        raise HFuseError(
            f"data for symbol '{name}' is a Python {type(value).__name__} ({value!r}); its C type is ambiguous",
            where, hint="use a NumPy scalar or array of the variable's type, e.g. np.float32(x) or np.int32(n)",
        )
    if isinstance(value, (np.ndarray, np.generic)) or is_device_array(value):
        if np.dtype(value.dtype).hasobject:
            raise HFuseError(f"data for symbol '{name}' has dtype {value.dtype}, which is not plain data", where)
        if int(value.nbytes) == 0:
            raise HFuseError(f"data for symbol '{name}' is empty", where)
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        if len(value) == 0 or (isinstance(value, memoryview) and value.nbytes == 0):
            raise HFuseError(f"data for symbol '{name}' is empty", where)
        return
    raise HFuseError(
        f"data for symbol '{name}' has type {type(value).__name__}; expected a NumPy array or scalar, "
        "bytes, or a CuPy array", where,
    )


def symbol_nbytes(value: Any) -> int:
    """How many bytes ``value`` (a checked symbol value) holds."""
    if isinstance(value, memoryview):
        return value.nbytes
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return int(value.nbytes)


def symbol_bytes(value: Any) -> bytes:
    """The bytes of a symbol value in C order (a CuPy array is copied to the host: GPU only)."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if is_device_array(value):
        value = value.get()  # cupy.ndarray.get(): a NumPy copy on the host
    return np.asarray(value).tobytes()


def symbol_digest(value: Any) -> str:
    """SHA-256 of a symbol value's bytes."""
    return hashlib.sha256(symbol_bytes(value)).hexdigest()


def describe_symbol(value: Any) -> dict[str, Any]:
    """A symbol value as data: dtype, shape and size, not contents (for cache keys and plans)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"dtype": "bytes", "shape": [symbol_nbytes(value)], "bytes": symbol_nbytes(value)}
    return {"dtype": str(value.dtype), "shape": [int(d) for d in value.shape], "bytes": symbol_nbytes(value)}
