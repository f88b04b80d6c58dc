"""Fused against unfused on the GPU, bit for bit: what the GPU twins of the CPU tests share.

Each original kernel is compiled from ``hfuse.api.device_source`` (as ``hfuse tune``
compiles it) and run alone on fresh inputs; the fused kernel runs on inputs made again
from the same seeds; every output must be byte-equal.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from hfuse.api import FusedKernel, device_source
from hfuse.frontend.options import CompileOptions
from hfuse.runtime.compile import Compiler
from hfuse.spec import Dim3, KernelSpec
from hfuse.toolkit import cuda_include_dirs


@dataclass(frozen=True)
class Launch:
    """One kernel's launch: its arguments, grid, dynamic shared memory, and which arguments it writes."""

    args: list[Any]
    grid: Dim3
    smem: int
    outputs: tuple[int, ...]


Make = Callable[[np.random.Generator, Any], Launch]
"""(generator, cupy) -> a launch on fresh inputs."""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


_FUNCTIONS: dict[tuple[str, str], Any] = {}


def compiled(cp, source: str, expression: str, flags: Sequence[str] = (), options: CompileOptions | None = None):
    """The kernel ``expression`` of ``source``, cached per session: with ``options`` (the
    request's), compiled as ``hfuse tune`` compiles it (NVRTC, or nvcc for a source that
    keeps PyTorch's headers); else with NVRTC through CuPy and ``flags`` (an installed
    library's ``-I``)."""
    key = (hashlib.sha256(source.encode()).hexdigest(), expression, tuple(flags), options)
    if key not in _FUNCTIONS:
        if options is not None:
            _FUNCTIONS[key] = Compiler.for_sources(options, [source], more=flags).get(
                source, expression).raw
        else:
            nvrtc = ("-std=c++17", *(f"-I{d}" for d in cuda_include_dirs()), *flags)
            _FUNCTIONS[key] = cp.RawModule(code=source, options=nvrtc, name_expressions=(expression,)).get_function(
                expression)
    return _FUNCTIONS[key]


def run(cp, fn, grid: Dim3, block: Dim3, args: Sequence[Any], smem: int) -> None:
    fn(grid.as_tuple(), block.as_tuple(), tuple(args), shared_mem=smem)
    cp.cuda.Device().synchronize()


def differences(cp, specs: Sequence[KernelSpec], makers: Sequence[Make], fused: FusedKernel,
                seed: Sequence[int], flags: Sequence[str] = (), options: CompileOptions | None = None) -> list[str]:
    """What the fused kernel writes differently from the originals (empty: bit-equal);
    ``options``: those the request was fused with (the originals are read with them too)."""
    seeds = lambda: [np.random.default_rng([*seed, j]) for j in range(len(specs))]  # noqa: E731
    expected = []
    for spec, make, rng in zip(specs, makers, seeds()):
        made = make(rng, cp)
        original = device_source(spec, options=options) if options is not None else device_source(spec)
        run(cp, compiled(cp, original.source, original.name_expression, flags, options), made.grid, spec.block,
            made.args, made.smem)
        expected.append([cp.asnumpy(made.args[i]).tobytes() for i in made.outputs])
    made = [make(rng, cp) for make, rng in zip(makers, seeds())]
    launch = fused.pack([m.args for m in made], [m.grid for m in made], [m.smem for m in made])
    run(cp, compiled(cp, fused.source, fused.name_expression, flags, options), launch.grid, launch.block,
        launch.args, launch.shared_mem)
    problems = []
    for spec, m, want in zip(specs, made, expected):
        for index, w in zip(m.outputs, want):
            got = cp.asnumpy(m.args[index])
            if got.tobytes() != w:
                ref = np.frombuffer(w, dtype=got.dtype)
                problems.append(f"{spec.name} argument {index}: {np.flatnonzero(got.ravel() != ref).size} of "
                                f"{ref.size} differ")
    return problems
