"""Device arrays of any framework as kernel arguments, without copies.

CuPy launches CuPy arrays and NumPy scalars. A PyTorch tensor, a JAX array or a Numba
device array describes the same memory through ``__cuda_array_interface__`` or DLPack.
``as_device_array`` wraps it in a CuPy view (no copy) where hfuse works on the data
(tuning inputs: snapshots, comparisons); ``as_kernel_arg``, on the launch path, passes just
its address when that is cheaper than a view.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from ..errors import HFuseError
from ..launch import is_device_array
from .device import require_gpu

_DLPACK_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged


class ForeignArrayError(HFuseError):
    """An array that cannot be passed to a kernel as it is (on the host, needs grad, ...)."""


def _interface(value: Any) -> dict | None:
    try:
        return value.__cuda_array_interface__
    except AttributeError:
        return None
    except Exception as exc:  # e.g. a tensor that requires grad, or one on the host
        raise ForeignArrayError(f"a {type(value).__name__} cannot be passed to a kernel: {exc}",
                                hint="pass a CUDA array (for PyTorch: tensor.detach() on a CUDA device)") from exc


@functools.lru_cache(maxsize=1)
def _passed_as_is() -> tuple[type, ...]:
    try:
        import cupy
    except ImportError:
        return (np.generic,)
    return (np.generic, cupy.ndarray)


def as_device_array(value: Any) -> Any:
    """``value`` as a CuPy array where it is another framework's CUDA array (a view of its
    memory, no copy); CuPy arrays, NumPy scalars and anything unknown unchanged."""
    if isinstance(value, _passed_as_is()) or is_device_array(value):
        return value
    if isinstance(value, np.ndarray):
        raise ForeignArrayError("a NumPy array is host memory; a kernel needs a device array",
                                hint="pass cupy.asarray(array), or a scalar as a NumPy scalar (np.int32(n))")
    if _interface(value) is not None:
        return require_gpu().asarray(value)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        device_type = int(value.__dlpack_device__()[0])
        if device_type not in _DLPACK_CUDA:
            raise ForeignArrayError(f"a {type(value).__name__} on DLPack device type {device_type} (not CUDA) "
                                    "cannot be passed to a kernel", hint="move it to the GPU first")
        return require_gpu().from_dlpack(value)
    return value


def as_kernel_arg(value: Any) -> Any:
    """``value`` as CuPy can launch it: as ``as_device_array``, except that an array with
    ``__cuda_array_interface__`` is passed as its address (a kernel takes a pointer), after
    checking it is contiguous, as a kernel indexing raw memory expects."""
    if isinstance(value, _passed_as_is()):
        return value
    interface = _interface(value)
    if interface is None:
        return as_device_array(value)
    strides = interface.get("strides")
    if strides is not None and tuple(strides) != _c_strides(interface["shape"], np.dtype(interface["typestr"]).itemsize):
        raise ForeignArrayError(f"a {type(value).__name__} that is not C-contiguous cannot be passed to a kernel",
                                hint="pass a contiguous copy (tensor.contiguous(), cupy.ascontiguousarray)")
    return np.uint64(interface["data"][0])


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def as_kernel_args(args: Sequence[Any]) -> list[Any]:
    return [as_kernel_arg(a) for a in args]
