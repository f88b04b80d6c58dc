"""Arrays of other frameworks as kernel arguments: what is refused on the CPU (host
memory, errors of the array's own interface); the zero-copy views are tested on the GPU
(tests/torch)."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.runtime.arrays import ForeignArrayError, as_device_array, as_kernel_arg


class HostDLPack:
    """A DLPack array on the CPU (device type 1)."""

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be exported")

    def __dlpack_device__(self):
        return (1, 0)


class GradTensor:
    """An array whose interface refuses, as a PyTorch tensor that requires grad does."""

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")


def test_scalars_and_unknown_values_pass_unchanged():
    scalar, other = np.int32(3), object()
    assert as_kernel_arg(scalar) is scalar and as_kernel_arg(other) is other


def test_host_memory_is_refused_with_a_hint():
    with pytest.raises(ForeignArrayError, match="not CUDA"):
        as_kernel_arg(HostDLPack())
    with pytest.raises(ForeignArrayError, match="host memory") as info:
        as_kernel_arg(np.zeros(4))
    assert "cupy.asarray" in str(info.value)


def test_an_interface_that_refuses_is_reported_with_its_reason():
    with pytest.raises(ForeignArrayError, match="requires grad"):
        as_kernel_arg(GradTensor())


class Strided:
    """A CUDA array interface of a transposed 4x8 float32 array (column-major)."""

    __cuda_array_interface__ = {"shape": (4, 8), "typestr": "<f4", "strides": (4, 16), "data": (4096, False),
                                "version": 3}


class Contiguous:
    __cuda_array_interface__ = {"shape": (4, 8), "typestr": "<f4", "strides": (32, 4), "data": (4096, False),
                                "version": 3}


def test_launch_path_passes_the_address_of_a_contiguous_array():
    assert as_kernel_arg(Contiguous()) == np.uint64(4096) and as_kernel_arg(Contiguous()).dtype == np.uint64
    with pytest.raises(ForeignArrayError, match="not C-contiguous"):
        as_kernel_arg(Strided())


def test_device_array_path_refuses_host_memory_too():
    with pytest.raises(ForeignArrayError, match="host memory"):
        as_device_array(np.zeros(3))
