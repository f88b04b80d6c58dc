"""The kernels of a fused PyTorch op, as data, and their parameters as the op takes them
(plain Python: no torch import, so it is tested where PyTorch is not installed)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..api import prepare
from ..errors import Location
from ..frontend.options import CompileOptions
from ..spec import Dim3, KernelSpec
from .params import OpParam, op_params

GridRule = Callable[[Sequence[Any], Dim3], Dim3]
"""The grid of a launch from its arguments and the kernel's block (in the fused plan, the part's)."""


@dataclass(frozen=True)
class TorchKernel:
    """One kernel of a fused op: where it is, which of its arguments it writes, its grid."""

    spec: KernelSpec
    outputs: tuple[int, ...]
    grid: Dim3 | GridRule
    dynamic_smem: int = 0
    source: str | None = None
    """The CUDA text when it is not in ``spec.file`` (``load_inline``-style sources)."""

    def grid_for(self, args: Sequence[Any], block: Dim3) -> Dim3:
        return Dim3.of(self.grid(args, block)) if callable(self.grid) else Dim3.of(self.grid)


def kernel_params(kernels: Sequence[TorchKernel], options: CompileOptions) -> list[list[OpParam]]:
    """Each kernel's parameters as the op takes them, from one run of the front end."""
    sources = {str(k.spec.file): k.source for k in kernels if k.source is not None}
    unit = prepare([k.spec for k in kernels], sources=sources or None, options=options)
    found = []
    for i, (kernel, prepared) in enumerate(zip(kernels, unit.kernels)):
        fn = prepared.function
        template = dict(zip(fn.template_params, kernel.spec.template_args))
        found.append(op_params(i, kernel.spec.instance, fn.params, template, kernel.outputs,
                               Location(fn.file, fn.line, kernel.spec.instance)))
    return found


def torch_kernel(file: str | Path, name: str, block: Any, *, outputs: Sequence[int], grid: Dim3 | GridRule,
                 template_args: Sequence[str] = (), tunable: bool = False, dynamic_smem: int = 0,
                 source: str | None = None, options: CompileOptions | None = None) -> TorchKernel:
    """Shorthand for ``TorchKernel(KernelSpec(...), ...)``."""
    spec = KernelSpec(Path(file), name, Dim3.of(block), tuple(template_args), tunable, options)
    return TorchKernel(spec, tuple(outputs), grid, dynamic_smem, source)
