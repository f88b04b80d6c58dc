"""Running a ``KernelLaunch`` on the GPU: prepare, launch, keep and restore outputs, compare.

A kernel that accumulates into its outputs (histograms, atomically appended result
lists) gives a different answer on every run unless its outputs start from the same
contents, so each run restores the outputs' initial contents first (``OutputSnapshot``).
Inputs the kernel only reads are never copied.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import HFuseError, Location
from ..frontend.parse import read_source_file
from ..launch import KernelLaunch, Output
from ..spec import Dim3
from .loaded import CompiledKernel
from .compile import Compiler
from .binary import LaunchError
from .device import require_gpu
from .symbols import DeviceVariable, compile_with_symbols, load_with_symbols


class ArgumentError(HFuseError):
    """Arguments that do not fit the kernel's parameters."""


def read_source(launch: KernelLaunch) -> str:
    """The CUDA text of a launch: ``launch.source`` when given, else the kernel's file."""
    if launch.source is not None:
        return launch.source
    return read_source_file(launch.kernel.file, where=Location(launch.kernel.file, None, launch.name))


def _is_device_array(value: Any) -> bool:
    return hasattr(value, "data") and hasattr(getattr(value, "data"), "ptr") and hasattr(value, "dtype")


def check_args(name: str, args: Sequence[Any], kernel: CompiledKernel | None = None,
               param_types: Sequence[str] | None = None) -> None:
    """Rejects arguments CuPy would pass wrongly and checks them against the parameters.

    Python ints and floats are refused: CuPy passes them as 64-bit values, which a kernel
    taking ``int`` or ``float`` silently misreads. Against the PTX parameter list we check
    the count and each parameter's byte size (8 for a device pointer). ``param_types``
    (C++ types from the front end, when it provides them) are only used in messages.
    """
    where = Location(kernel=name)
    for i, a in enumerate(args):
        if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
            raise ArgumentError(
                f"argument {i} is a Python {type(a).__name__} ({a!r}); its C type is ambiguous",
                where,
                hint="pass a NumPy scalar of the parameter's type, e.g. np.int32(n) or np.float32(x)",
            )
        if not (_is_device_array(a) or isinstance(a, np.generic)):
            raise ArgumentError(
                f"argument {i} has type {type(a).__name__}; expected a CuPy array or a NumPy scalar", where
            )
    params = kernel.params if kernel is not None else None
    if params is None:
        return
    if len(params) != len(args):
        raise ArgumentError(f"the kernel takes {len(params)} parameters but {len(args)} arguments were given", where)
    for i, (p, a) in enumerate(zip(params, args)):
        size = 8 if _is_device_array(a) else int(a.dtype.itemsize)
        if size != p.size:
            what = f" ({param_types[i]})" if param_types and i < len(param_types) else ""
            got = "a device pointer" if _is_device_array(a) else f"a {a.dtype} scalar"
            raise ArgumentError(
                f"parameter {i}{what} is {p.size} bytes wide but the argument is {got} ({size} bytes)", where
            )


@dataclass
class PreparedLaunch:
    """A compiled kernel with everything needed to launch it, and what it writes."""

    name: str
    kernel: CompiledKernel
    grid: Dim3
    block: Dim3
    args: tuple
    shared_mem: int = 0
    outputs: tuple[Output, ...] = ()
    output_arrays: tuple = field(default=(), repr=False)
    """The device arrays of ``outputs``, in the same order."""
    variables: tuple[DeviceVariable, ...] = ()
    """The ``__device__`` variables it writes: restored before a run, compared after it."""

    @property
    def compared(self) -> tuple[Output | DeviceVariable, ...]:
        """What a run gives to compare (``run_once_on_device``): the outputs, then the variables."""
        return (*self.outputs, *self.variables)

    def __call__(self, stream: Any = None) -> None:
        self.kernel.launch(self.grid, self.block, self.args, self.shared_mem, stream)


def prepare(launch: KernelLaunch, compiler: Compiler, *, param_types: Sequence[str] | None = None,
            options: Sequence[str] = ()) -> PreparedLaunch:
    """Compiles (cached) and loads ``launch``'s kernel and checks its arguments.

    ``options`` are NVRTC flags for this source on top of the compiler's own: the
    user's ``-include`` files, which an original source needs and a fused one must not get.
    """
    name = launch.kernel.instance
    if launch.symbols:  # its own module per distinct data, filled before anything runs
        binary = compile_with_symbols(compiler, read_source(launch), name, launch.symbols, kernel=launch.name,
                                      options=options)
        kernel = load_with_symbols(compiler, binary, name, launch.symbols, kernel=launch.name)
    else:
        kernel = compiler.get(read_source(launch), name, options=options)
    args = tuple(launch.args)
    check_args(launch.name, args, kernel, param_types)
    block = launch.kernel.block
    prepared = PreparedLaunch(
        name=launch.name,
        kernel=kernel,
        grid=launch.grid_for(block),
        block=block,
        args=args,
        shared_mem=launch.smem_for(block),
        outputs=tuple(launch.outputs),
        output_arrays=tuple(args[o.index] for o in launch.outputs),
    )
    kernel.allow_dynamic_smem(prepared.shared_mem)
    return prepared


def prepare_fused(
    kernel: CompiledKernel,
    packed: Any,
    launches: Sequence[KernelLaunch],
    name: str = "",
) -> PreparedLaunch:
    """A launch of a fused kernel (``packed`` is the fuser's ``FusedLaunch``).

    Its outputs are the originals' outputs in kernel order, so ``compare_outputs`` can
    hold them against the originals' results concatenated in the same order.
    """
    args = tuple(packed.args)
    check_args(name or kernel.name, args, kernel)
    outputs = tuple(o for l in launches for o in l.outputs)
    arrays = tuple(l.args[o.index] for l in launches for o in l.outputs)
    prepared = PreparedLaunch(
        name=name or kernel.name,
        kernel=kernel,
        grid=Dim3.of(packed.grid),
        block=Dim3.of(packed.block),
        args=args,
        shared_mem=int(packed.shared_mem),
        outputs=outputs,
        output_arrays=arrays,
    )
    kernel.allow_dynamic_smem(prepared.shared_mem)
    return prepared


class OutputSnapshot:
    """Device copies of the initial contents of every output of some launches."""

    def __init__(self, arrays: Sequence[Any]):
        seen: dict[int, Any] = {}
        for a in arrays:
            seen.setdefault(id(a), a)  # one copy per distinct array, even if shared
        self._pairs = [(a, a.copy()) for a in seen.values()]

    def restore(self, stream: Any = None) -> None:
        """Writes the initial contents back (asynchronously, on ``stream`` or the current one)."""
        cupy = require_gpu()
        for dst, src in self._pairs:
            if stream is None:
                cupy.copyto(dst, src)
            else:
                with stream:
                    cupy.copyto(dst, src)


def snapshot_initial(launches: Sequence[PreparedLaunch]) -> OutputSnapshot:
    return OutputSnapshot([a for l in launches for a in l.output_arrays])


def restore(snapshot: OutputSnapshot, stream: Any = None) -> None:
    snapshot.restore(stream)


def read_outputs(launch: PreparedLaunch) -> list[np.ndarray]:
    """Host copies of the launch's outputs (synchronises)."""
    cupy = require_gpu()
    return [cupy.asnumpy(a) for a in launch.output_arrays]


def run_once(launch: PreparedLaunch, snapshot: OutputSnapshot | None = None) -> list[np.ndarray]:
    """Restore outputs, launch, wait, surface any error, return host copies of outputs."""
    cupy = require_gpu()
    return [cupy.asnumpy(a) for a in run_once_on_device(launch, snapshot)]


def run_once_on_device(launch: PreparedLaunch, snapshot: OutputSnapshot | None = None) -> list[Any]:
    """As ``run_once`` but the outputs stay on the GPU (copies): verifying gigabytes of
    output on the host would cost seconds per candidate. The device variables it writes
    start from their initial contents too, and follow the outputs (``compared``)."""
    cupy = require_gpu()
    (snapshot or snapshot_initial([launch])).restore()
    for variable in launch.variables:
        variable.restore()
    launch()
    try:
        cupy.cuda.get_current_stream().synchronize()
    except Exception as exc:
        # An illegal address or a trap poisons the context; say which kernel did it.
        raise LaunchError(f"kernel '{launch.name}' failed while running: {type(exc).__name__}: {exc}") from exc
    return [a.copy() for a in (*launch.output_arrays, *(v.view for v in launch.variables))]


def _compare_on_device(exp: Any, out: Any, spec: Output | DeviceVariable) -> str | None:
    cupy = require_gpu()
    if exp.shape != out.shape or exp.dtype != out.dtype:
        return f"shape/dtype {out.shape} {out.dtype} instead of {exp.shape} {exp.dtype}"
    if spec.compare == "close":
        mask = ~cupy.isclose(out, exp, rtol=spec.rtol, atol=spec.atol, equal_nan=True)
    else:
        if spec.compare == "unordered":
            exp, out = cupy.sort(exp.reshape(-1)), cupy.sort(out.reshape(-1))
        # Bit equality through same-width unsigned views (-0.0 != 0.0, equal NaN payloads agree).
        unsigned = {1: cupy.uint8, 2: cupy.uint16, 4: cupy.uint32, 8: cupy.uint64}.get(exp.dtype.itemsize)
        a = cupy.ascontiguousarray(exp).reshape(-1)
        b = cupy.ascontiguousarray(out).reshape(-1)
        if unsigned is None:
            a, b, unsigned = a.view(cupy.uint8), b.view(cupy.uint8), cupy.uint8
        mask = a.view(unsigned) != b.view(unsigned)
    count = int(mask.sum())
    if count == 0:
        return None
    first = int(cupy.flatnonzero(mask.reshape(-1))[0])
    return (f"{count} of {mask.size} elements differ; first at flat index {first}: "
            f"expected {exp.reshape(-1)[first].item()!r}, got {out.reshape(-1)[first].item()!r}")


def _describe_mismatch(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> str:
    bad = np.flatnonzero(mask.reshape(-1))
    first = int(bad[0])
    return (f"{bad.size} of {mask.size} elements differ; first at flat index {first}: "
            f"expected {a.reshape(-1)[first]!r}, got {b.reshape(-1)[first]!r}")


def compare_outputs(expected: Sequence[np.ndarray], got: Sequence[np.ndarray],
                    outputs: Sequence[Output | DeviceVariable]) -> list[str]:
    """Differences between two runs' outputs (``PreparedLaunch.compared``), one line each;
    empty when they agree."""
    if not (len(expected) == len(got) == len(outputs)):
        return [f"output count differs: {len(expected)} expected, {len(got)} got, {len(outputs)} declared"]
    problems = []
    for exp, out, spec in zip(expected, got, outputs):
        what = (f"device variable '{spec.name}' (bytes)" if isinstance(spec, DeviceVariable) else
                f"output (argument {spec.index}, {spec.compare})")
        if not isinstance(exp, np.ndarray) and hasattr(exp, "device"):  # CuPy: compare where the data is
            problem = _compare_on_device(exp, out, spec)
            if problem:
                problems.append(f"{what}: {problem}")
            continue
        exp, out = np.asarray(exp), np.asarray(out)
        if exp.shape != out.shape or exp.dtype != out.dtype:
            problems.append(f"{what}: shape/dtype {out.shape} {out.dtype} instead of {exp.shape} {exp.dtype}")
            continue
        if spec.compare == "close":
            mask = ~np.isclose(out, exp, rtol=spec.rtol, atol=spec.atol, equal_nan=True)
        else:
            a, b = (np.sort(exp, axis=None), np.sort(out, axis=None)) if spec.compare == "unordered" else (exp, out)
            # Bit equality via a byte view: -0.0 vs 0.0 differ, equal NaN payloads agree.
            a8 = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, a.dtype.itemsize)
            b8 = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(b.size, b.dtype.itemsize)
            mask = (a8 != b8).any(axis=1).reshape(a.shape)
            exp, out = a, b
        if mask.any():
            problems.append(f"{what}: {_describe_mismatch(np.asarray(exp), np.asarray(out), mask)}")
    return problems
