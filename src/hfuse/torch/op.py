"""Fused kernels as PyTorch ops: tune on example tensors, then call with tensors on
``torch.cuda.current_stream()``, eagerly, under ``torch.compile(fullgraph=True)`` and
inside CUDA graph capture (a ``torch.library`` custom op that declares what it writes).

Whatever the plan decided, the op computes the same thing: a plan that fuses launches
the fused kernel, one that declines launches the originals the fastest unfused way
(``launcher_for(plan)``). Tensors reach the kernels as raw pointers (no CuPy wrapper per
call), after checks of device, dtype, contiguity and alignment against the kernel's
parameter types.
"""
from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..errors import HFuseError
from ..frontend.options import NO_OPTIONS, CompileOptions
from ..launch import KernelLaunch, Output
from ..runtime.arrays import as_device_array
from ..tuning.plan import Plan
from ..tuning.tuner import TuneSettings, tune
from .kernels import TorchKernel, kernel_params
from .params import OpParam, op_schema
from ..tuning.launcher import launcher_for

_OPS = itertools.count()


class ArgumentCheck:
    """Turns one kernel's call arguments into what the launcher passes, or says what is wrong.

    ``python_values``: a tensor becomes its address and an integer its value as Python
    ints (for a launcher that packs arguments itself: ``PlanLauncher.direct_launch``);
    otherwise NumPy scalars of the parameter's type, which CuPy passes at the right width.
    """

    def __init__(self, kernel: str, params: Sequence[OpParam], device: torch.device, python_values: bool = False):
        self.kernel, self.params, self.device, self.python_values = kernel, list(params), device, python_values
        self._index = _device_index(device)
        self._dtypes = [tuple(getattr(torch, d) for d in p.dtypes if hasattr(torch, d)) for p in self.params]

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if len(args) != len(self.params):
            raise HFuseError(f"'{self.kernel}' takes {len(self.params)} arguments "
                             f"({', '.join(p.name for p in self.params)}); {len(args)} given")
        return [self._one(p, a, d) for p, a, d in zip(self.params, args, self._dtypes)]

    def _one(self, p: OpParam, value: Any, dtypes: tuple) -> Any:
        if p.kind == "tensor":
            # the common case first, each check one cheap call; the messages below say what failed
            if (isinstance(value, torch.Tensor) and value.get_device() == self._index
                    and (not dtypes or value.dtype in dtypes) and value.is_contiguous()):
                pointer = value.data_ptr()
                if pointer % p.align == 0:
                    return pointer if self.python_values else np.uint64(pointer)
            self._refuse_tensor(p, value, dtypes)
        if type(value) is int and p.scalar in _INT_RANGES:
            low, high = _INT_RANGES[p.scalar]
            if low <= value <= high:
                return value if self.python_values else _SCALAR_TYPES[p.scalar](value)
        return self._scalar(p, value)

    def _refuse_tensor(self, p: OpParam, value: Any, dtypes: tuple) -> None:
        where = f"'{self.kernel}' argument {p.name} ({p.c_type})"
        if not isinstance(value, torch.Tensor):
            raise HFuseError(f"{where} must be a tensor, got {type(value).__name__}")
        if value.device != self.device:
            raise HFuseError(f"{where} is on {value.device}; the op runs on {self.device}",
                             hint=f"move it: tensor.to('{self.device}')")
        if dtypes and value.dtype not in dtypes:
            raise HFuseError(f"{where} has dtype {value.dtype}; the kernel reads {' or '.join(str(d) for d in dtypes)}")
        if not value.is_contiguous():
            raise HFuseError(f"{where} is not contiguous; the kernel indexes raw memory", hint="pass tensor.contiguous()")
        raise HFuseError(f"{where} starts at an address not aligned to {p.align} bytes")

    def _scalar(self, p: OpParam, value: Any) -> Any:
        where = f"'{self.kernel}' argument {p.name} ({p.c_type})"
        if isinstance(value, torch.Tensor):
            raise HFuseError(f"{where} is a scalar parameter; got a tensor", hint="pass a Python number")
        dtype = np.dtype(p.scalar)
        if isinstance(value, np.generic) and value.dtype != dtype:
            raise HFuseError(f"{where} takes {p.scalar} scalars; got a NumPy {value.dtype}")
        if dtype.kind in "iu":
            if isinstance(value, (float, np.floating, bool)):
                raise HFuseError(f"{where} is an integer parameter; got {value!r}")
            info = np.iinfo(dtype)
            if not info.min <= int(value) <= info.max:
                raise HFuseError(f"{where} holds {info.min}..{info.max}; {value} does not fit")
        return dtype.type(value)


_INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
_INT_RANGES = {t: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in _INT_TYPES}
_SCALAR_TYPES = {t: np.dtype(t).type for t in _INT_TYPES}


class FusedOp:
    """The callable ``fused_op`` returns: ``op(args_kernel0, args_kernel1, ...)``.

    Each ``args_kernelN`` is a sequence of that kernel's arguments, as it would be launched
    alone. The call goes through ``torch.ops.hfuse.<name>`` (``self.op``), so it is traced
    by ``torch.compile`` and recorded by CUDA graph capture.
    """

    def __init__(self, plan: Plan, kernels: Sequence[TorchKernel], params: list[list[OpParam]],
                 device: torch.device, symbols: Sequence[dict[str, Any] | None] | None = None):
        self.plan, self.kernels, self.params, self.device = plan, list(kernels), params, device
        self.launcher = launcher_for(plan, symbols=symbols)
        self.launcher.sync_symbols()  # the data goes in now: nothing synchronises inside a capture
        direct = self.launcher.direct_launch
        self._checks = [ArgumentCheck(k.spec.instance, p, device, direct) for k, p in zip(kernels, params)]
        self._counts = [len(p) for p in params]
        self._smems = list(plan.smems)
        self._streams: dict[int, Any] = {}
        self._index = _device_index(device)
        digest = hashlib.sha256(f"{plan.cache_key}{plan.kernels}".encode()).hexdigest()[:10]
        self.name = f"fused_{'_'.join(_ident(k) for k in plan.kernels)}_{digest}_{next(_OPS)}"
        flat = [p for ps in params for p in ps]
        self.schema = op_schema(self.name, flat)
        self._library = torch.library.Library("hfuse", "FRAGMENT")
        self._library.define(self.schema)
        self._library.impl(self.name, self._run, "CUDA")
        torch.library.register_fake(f"hfuse::{self.name}", _nothing, lib=self._library)
        self.op = getattr(torch.ops.hfuse, self.name)

    def __call__(self, *args_per_kernel: Sequence[Any]) -> None:
        if len(args_per_kernel) != len(self.kernels):
            raise HFuseError(f"the op launches {len(self.kernels)} kernels ({', '.join(self.plan.kernels)}); "
                             f"{len(args_per_kernel)} argument lists given")
        for args, count, kernel in zip(args_per_kernel, self._counts, self.plan.kernels):
            if len(args) != count:
                raise HFuseError(f"'{kernel}' takes {count} arguments; {len(args)} given")
        if torch.compiler.is_compiling():
            self.op(*(a for args in args_per_kernel for a in args))  # traced as the custom op (it declares what it writes)
        else:
            # eager (and CUDA graph capture, which records the launches): the op's own
            # implementation without the dispatcher's boxing of every argument
            self._launch(args_per_kernel)

    def _stream(self) -> Any:
        handle = _current_raw_stream(self._index)
        stream = self._streams.get(handle)
        if stream is None:
            import warnings

            import cupy

            with warnings.catch_warnings():  # CuPy 14 prefers Stream.from_external, which needs an object, not a handle
                warnings.simplefilter("ignore", DeprecationWarning)
                stream = self._streams[handle] = cupy.cuda.ExternalStream(handle, self._index)
        return stream

    def _run(self, *flat: Any) -> None:
        """The op's CUDA implementation: the flat argument list, split per kernel."""
        per_kernel, start = [], 0
        for count in self._counts:
            per_kernel.append(flat[start:start + count])
            start += count
        self._launch(per_kernel)

    def _launch(self, per_kernel: Sequence[Sequence[Any]]) -> None:
        converted = [check(args) for check, args in zip(self._checks, per_kernel)]
        grids = [k.grid_for(args, b) for k, args, b in zip(self.kernels, per_kernel, self.plan.blocks)]
        self.launcher.launch(converted, grids, self._smems, self._stream())


def _nothing(*args: Any) -> None:
    return None


def _device_index(device: torch.device) -> int:
    """As ``Tensor.get_device()`` numbers devices: -1 for the CPU (checks are tested there)."""
    if device.type != "cuda":
        return -1
    return device.index if device.index is not None else torch.cuda.current_device()


def _current_raw_stream(device_index: int) -> int:
    """The handle of PyTorch's current stream (the private accessor Inductor's generated
    code uses, a fraction of a microsecond; the public one builds a Stream object)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return int(raw(device_index)) if raw is not None else torch.cuda.current_stream(device_index).cuda_stream


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:24]


def fused_op(
    kernels: Sequence[TorchKernel],
    example_args: Sequence[Sequence[Any]],
    *,
    settings: TuneSettings = TuneSettings(),
    options: CompileOptions | None = None,
    symbols: Sequence[dict[str, Any] | None] | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: bool = False,
    plan: Plan | None = None,
) -> FusedOp:
    """Tunes ``kernels`` on ``example_args`` (one list per kernel: tensors and numbers) and
    returns the op. The plan cache is the tuner's (``cache_dir``, else ``$HFUSE_CACHE_DIR``,
    else ``~/.cache/hfuse``): a second run of the program costs no tuning. ``plan``: use a
    saved plan instead of tuning. ``symbols``: each kernel's ``__constant__`` data."""
    if len(kernels) != len(example_args):
        raise HFuseError(f"{len(kernels)} kernels but {len(example_args)} example argument lists")
    options = options or NO_OPTIONS
    params = kernel_params(kernels, options)
    tensors = [a for args in example_args for a in args if isinstance(a, torch.Tensor)]
    if not tensors or any(not t.is_cuda for t in tensors):
        raise HFuseError("the example arguments must hold CUDA tensors (the op runs where they are)")
    device = tensors[0].device
    if plan is not None and list(plan.kernels) != [k.spec.instance for k in kernels]:
        raise HFuseError(f"the plan is for {', '.join(plan.kernels)}, not {', '.join(k.spec.instance for k in kernels)}",
                         hint="give the kernels in the plan's order, or tune them")
    if plan is None:
        launches = []
        for i, (kernel, args, ps) in enumerate(zip(kernels, example_args, params)):
            converted = ArgumentCheck(kernel.spec.instance, ps, device)(args)  # checked as a call would be
            values = [as_device_array(a.detach()) if p.kind == "tensor" else v
                      for a, p, v in zip(args, ps, converted)]
            launches.append(KernelLaunch(
                kernel.spec, values, [Output(o) for o in kernel.outputs],
                grid=(lambda block, k=kernel, a=args: k.grid_for(a, block)), dynamic_smem=kernel.dynamic_smem,
                label=kernel.spec.instance, source=kernel.source, symbols=(symbols[i] or {}) if symbols else {}))
        with torch.cuda.device(device):
            torch.cuda.synchronize(device)  # the examples' producers finished before CuPy reads them
            plan = tune(launches, settings, cache_dir=cache_dir, use_cache=use_cache, progress=progress,
                        options=options)
    return FusedOp(plan, kernels, params, device, symbols)


__all__ = ["ArgumentCheck", "FusedOp", "fused_op"]
