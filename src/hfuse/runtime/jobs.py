"""A launch as plain data: compiled code, shape and arguments by reference.

A ``LaunchJob`` is what the tuner hands to whatever runs kernels for it, in its own
process or in a worker (``tune.isolation``): it pickles, holds no CUDA object and no
device pointer (arrays are ``ArrayRef``s into the runner's arrays; symbol data is host
bytes). ``prepare_job`` turns it into a ``PreparedLaunch`` where it runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..launch import Output, symbol_bytes
from ..spec import Dim3
from .binary import CompiledBinary
from .compile import Compiler
from .execute import PreparedLaunch, check_args
from .symbols import device_variables, load_with_symbols
from .transfer import ArrayRef, ArrayTable, resolve


@dataclass(frozen=True)
class LaunchJob:
    """One kernel launch another process can run."""

    name: str
    binary: CompiledBinary = field(repr=False)
    name_expression: str
    grid: Dim3
    block: Dim3
    shared_mem: int
    args: tuple
    """NumPy scalars and ``ArrayRef``s, in parameter order."""
    outputs: tuple[Output, ...] = ()
    output_args: tuple[ArrayRef, ...] = ()
    """The arrays ``outputs`` describe, in the same order."""
    symbols: Mapping[str, np.ndarray] = field(default_factory=dict, repr=False)
    """``__constant__``/``__device__`` data copied into the module before it runs (bytes)."""
    variables: tuple[str, ...] = ()
    """The ``__device__`` variables it writes, by the source's names (compiled with their
    ``&name`` expressions): each starts from its initial contents and is compared after a run."""


def job_of(name: str, binary: CompiledBinary, name_expression: str, *, grid: Dim3, block: Dim3, shared_mem: int,
           args: Sequence[Any], outputs: Sequence[Output], output_arrays: Sequence[Any], table: ArrayTable,
           symbols: Mapping[str, Any] | None = None, variables: Sequence[str] = ()) -> LaunchJob:
    """A job for a launch whose device arrays are entered in ``table``."""
    refs = table.refs(output_arrays)
    return LaunchJob(
        name=name, binary=binary, name_expression=name_expression, grid=Dim3.of(grid), block=Dim3.of(block),
        shared_mem=int(shared_mem), args=table.refs(args), outputs=tuple(outputs), output_args=refs,  # type: ignore[arg-type]
        symbols={n: np.frombuffer(symbol_bytes(v), dtype=np.uint8) for n, v in (symbols or {}).items()},
        variables=tuple(variables),
    )


def prepare_job(job: LaunchJob, compiler: Compiler, arrays: Sequence[Any]) -> PreparedLaunch:
    """Loads the job's kernel (and its symbol data), binds its arguments to ``arrays`` and
    finds the device variables it writes."""
    kernel = load_with_symbols(compiler, job.binary, job.name_expression, job.symbols, kernel=job.name)
    args = resolve(job.args, arrays)
    check_args(job.name, args, kernel)
    prepared = PreparedLaunch(
        name=job.name, kernel=kernel, grid=job.grid, block=job.block, args=args, shared_mem=job.shared_mem,
        outputs=job.outputs, output_arrays=resolve(job.output_args, arrays),
        variables=device_variables(kernel.module, job.binary, job.variables, job.symbols, kernel=job.name),
    )
    kernel.allow_dynamic_smem(prepared.shared_mem)
    return prepared
