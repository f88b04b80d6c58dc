"""Device arrays carried to another process: host images that keep aliasing.

The tuner verifies and times candidates in a worker process (``tune.isolation``), so
that a fused kernel that deadlocks or faults cannot take the caller down. The worker has
a CUDA context of its own and cannot use the caller's device pointers, so:

1. ``ArrayTable`` replaces every distinct device array of some launches by an
   ``ArrayRef`` (its index), so launches can be described as plain data;
2. ``save_image`` copies the memory those arrays cover to host files, once per
   contiguous range: arrays whose bytes overlap (two views of one buffer, an argument
   passed twice) are carried as one range and rebuilt as views of it at the same offsets,
   so kernels that share memory share it in the worker too;
3. ``load_image`` uploads the ranges in the worker and rebuilds the arrays, by index.

Where the inputs come from a recipe (a benchmark workload and its seed, a user's
function: ``hfuse.batch.inputs``), nothing is copied: the worker makes them again on its
own GPU (``inputs_from_recipe``) and checks that they have the layout of the tuner's
(``describe_arrays``): the same dtypes, shapes, strides and sharing.

Plain host files (in ``/dev/shm`` where there is one), not pipes: a worker started again
after a crash reads them again without the caller copying anything twice.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import HFuseError
from ..launch import is_device_array
from .device import require_gpu


@dataclass(frozen=True)
class ArrayRef:
    """Stands for the ``index``-th array of an ``ArrayTable`` (in a job sent to a worker)."""

    index: int


class ArrayTable:
    """The distinct device arrays of some launches, in the order first seen."""

    def __init__(self) -> None:
        self.arrays: list[Any] = []
        self._index: dict[int, int] = {}

    def ref(self, value: Any) -> Any:
        """``value`` as an ``ArrayRef`` if it is a device array; anything else unchanged."""
        if not is_device_array(value):
            return value
        key = id(value)
        if key not in self._index:
            self._index[key] = len(self.arrays)
            self.arrays.append(value)
        return ArrayRef(self._index[key])

    def refs(self, values: Sequence[Any]) -> tuple:
        return tuple(self.ref(v) for v in values)


def resolve(values: Sequence[Any], arrays: Sequence[Any]) -> tuple:
    """``values`` with each ``ArrayRef`` replaced by its array."""
    return tuple(arrays[v.index] if isinstance(v, ArrayRef) else v for v in values)


@dataclass(frozen=True)
class ArrayView:
    """One array as a view of a carried memory range."""

    region: int
    offset: int
    """Bytes from the start of the range to the array's first element (its pointer)."""
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class HostImage:
    """Host copies of an ``ArrayTable``'s memory, in ``directory`` (one file per range)."""

    directory: str
    regions: tuple[int, ...]
    """Each range's size in bytes; range ``i`` is the file ``{i}.bin``."""
    views: tuple[ArrayView, ...]

    @property
    def nbytes(self) -> int:
        return sum(self.regions)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _extent(array: Any) -> tuple[int, int]:
    """The byte range ``[low, high)`` an array's elements cover (strides may be negative)."""
    ptr, size = int(array.data.ptr), int(array.size)
    if size == 0:
        return ptr, ptr
    low = high = ptr
    for n, stride in zip(array.shape, array.strides):
        span = (int(n) - 1) * int(stride)
        low, high = (low + span, high) if span < 0 else (low, high + span)
    return low, high + int(array.dtype.itemsize)


def _scratch_directory() -> str:
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return tempfile.mkdtemp(prefix="hfuse-inputs-", dir=base)


def merge_extents(extents: Sequence[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """The ranges to carry for these byte extents (overlapping ones merged), and the range
    each extent falls in."""
    order = sorted(range(len(extents)), key=lambda i: extents[i])
    merged: list[list[int]] = []
    region_of = [0] * len(extents)
    for i in order:
        low, high = extents[i]
        if merged and low < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
        region_of[i] = len(merged) - 1
    return [(low, high) for low, high in merged], region_of


ArrayLayout = tuple[tuple[str, tuple[int, ...], tuple[int, ...], int, int], ...]
"""Per array: dtype, shape, strides, the memory range it falls in and its offset there."""


def describe_arrays(arrays: Sequence[Any]) -> ArrayLayout:
    """What kernels can tell of some arrays without their contents: each one's dtype,
    shape and strides, and which of them share memory, at which offsets. Two processes
    that made their inputs from one recipe must agree on it (``inputs_from_recipe``)."""
    extents = [_extent(a) for a in arrays]
    merged, region_of = merge_extents(extents)
    # ranges numbered by the first array in each, not by address: where the allocator put
    # them differs from one process to another
    first_seen: dict[int, int] = {}
    for region in region_of:
        first_seen.setdefault(region, len(first_seen))
    return tuple((np.dtype(a.dtype).str, tuple(int(n) for n in a.shape), tuple(int(s) for s in a.strides),
                  first_seen[region_of[i]], int(a.data.ptr) - merged[region_of[i]][0]) for i, a in enumerate(arrays))


def arrays_of_launches(launches: Sequence[Any]) -> ArrayTable:
    """The device arrays of ``launches`` (``KernelLaunch``), in the order the tuner numbers them."""
    table = ArrayTable()
    for launch in launches:
        table.refs(launch.args)
    return table


def inputs_from_recipe(recipe: Any, expected: ArrayLayout) -> list[Any]:
    """The arrays of ``recipe.launches()`` made here, checked against ``expected`` (the
    layout of the arrays another process made from the same recipe), in table order."""
    arrays = arrays_of_launches(recipe.launches()).arrays
    found = describe_arrays(arrays)
    if found != expected:
        differ = next((i for i, (a, b) in enumerate(zip(found, expected)) if a != b), min(len(found), len(expected)))
        raise HFuseError(
            f"the inputs made again from their recipe differ from the tuner's ({len(found)} arrays against "
            f"{len(expected)}; the first difference at array #{differ})",
            hint="the launches function must return arrays of the same dtypes, shapes and sharing each call")
    return arrays


def save_image(arrays: Sequence[Any], directory: str | None = None) -> HostImage:
    """Copies the memory of ``arrays`` (CuPy arrays) to host files and says how to rebuild them."""
    cupy = require_gpu()
    merged, region_of = merge_extents([_extent(a) for a in arrays])
    directory = directory or _scratch_directory()
    try:
        for r, (low, high) in enumerate(merged):
            host = np.empty(high - low, dtype=np.uint8)
            if high > low:
                memory = cupy.cuda.UnownedMemory(low, high - low, owner=None)
                cupy.cuda.MemoryPointer(memory, 0).copy_to_host(host.ctypes.data, high - low)
            host.tofile(os.path.join(directory, f"{r}.bin"))
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    views = tuple(
        ArrayView(region_of[i], int(a.data.ptr) - merged[region_of[i]][0], tuple(int(n) for n in a.shape),
                  tuple(int(s) for s in a.strides), np.dtype(a.dtype).str)
        for i, a in enumerate(arrays)
    )
    return HostImage(directory, tuple(high - low for low, high in merged), views)


def load_image(image: HostImage) -> list[Any]:
    """The arrays of ``image`` on this process's GPU, in ``ArrayTable`` order."""
    cupy = require_gpu()
    regions = []
    for r, size in enumerate(image.regions):
        path = os.path.join(image.directory, f"{r}.bin")
        host = np.fromfile(path, dtype=np.uint8) if size else np.empty(0, dtype=np.uint8)
        regions.append(cupy.asarray(host))
    return [
        cupy.ndarray(v.shape, dtype=np.dtype(v.dtype), memptr=regions[v.region].data + v.offset, strides=v.strides)
        for v in image.views
    ]
