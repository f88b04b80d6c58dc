"""Which memory a worker is given: distinct arrays once each, overlapping views as one range."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hfuse.errors import HFuseError
from hfuse.runtime.transfer import (ArrayRef, ArrayTable, _extent, arrays_of_launches, describe_arrays,
                                    inputs_from_recipe, merge_extents, resolve)


def fake_array(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int = 4):
    return SimpleNamespace(data=SimpleNamespace(ptr=ptr), shape=shape, strides=strides, size=int(np.prod(shape)),
                           dtype=np.dtype(f"i{itemsize}"), nbytes=int(np.prod(shape)) * itemsize)


def test_extent_covers_every_element_whatever_the_strides():
    assert _extent(fake_array(1000, (10,), (4,))) == (1000, 1040)
    assert _extent(fake_array(1036, (10,), (-4,))) == (1000, 1040)  # reversed view: pointer at the end
    assert _extent(fake_array(1000, (3, 4), (64, 8))) == (1000, 1000 + 2 * 64 + 3 * 8 + 4)
    assert _extent(fake_array(1000, (0,), (4,))) == (1000, 1000)


def test_overlapping_ranges_merge_and_separate_ones_stay_apart():
    regions, region_of = merge_extents([(100, 200), (300, 400), (150, 250), (250, 260), (400, 410)])
    # 100-250 overlap (and 250-260 touches only); 300-400 and 400-410 only touch: kept apart
    assert regions == [(100, 250), (250, 260), (300, 400), (400, 410)]
    assert region_of == [0, 2, 0, 1, 3]


def test_a_table_gives_one_reference_per_array_and_leaves_scalars():
    a, b = fake_array(0, (4,), (4,)), fake_array(64, (4,), (4,))
    table = ArrayTable()
    refs = table.refs([a, np.int32(3), b, a])
    assert refs == (ArrayRef(0), np.int32(3), ArrayRef(1), ArrayRef(0))
    assert table.arrays == [a, b]
    assert resolve(refs, ["A", "B"]) == ("A", np.int32(3), "B", "A")


def test_a_layout_says_shapes_and_sharing_not_addresses():
    # one process: a buffer with two views of it, and a separate array
    here = [fake_array(1000, (8,), (4,)), fake_array(1016, (4,), (4,)), fake_array(5000, (2, 2), (8, 4))]
    # another process made the same from the recipe, the allocator placing them elsewhere
    # (the separate array below the buffer this time)
    there = [fake_array(90000, (8,), (4,)), fake_array(90016, (4,), (4,)), fake_array(100, (2, 2), (8, 4))]
    assert describe_arrays(here) == describe_arrays(there)
    assert describe_arrays(here)[1] == ("<i4", (4,), (4,), 0, 16)  # in the first array's range, 16 bytes in
    # the same shapes without the sharing is another layout
    apart = [fake_array(90000, (8,), (4,)), fake_array(95000, (4,), (4,)), fake_array(100, (2, 2), (8, 4))]
    assert describe_arrays(apart) != describe_arrays(here)


class _Recipe:
    def __init__(self, arrays):
        self.arrays = arrays

    def launches(self):
        return [SimpleNamespace(args=[self.arrays[0], np.int32(4), self.arrays[1]]),
                SimpleNamespace(args=[self.arrays[2], self.arrays[0]])]


def test_inputs_made_again_from_a_recipe_must_have_the_tuners_layout():
    made = [fake_array(1000, (8,), (4,)), fake_array(1016, (4,), (4,)), fake_array(5000, (2, 2), (8, 4))]
    layout = describe_arrays(arrays_of_launches(_Recipe(made).launches()).arrays)
    again = [fake_array(7000, (8,), (4,)), fake_array(7016, (4,), (4,)), fake_array(64, (2, 2), (8, 4))]
    assert inputs_from_recipe(_Recipe(again), layout) == again
    other = [fake_array(7000, (8,), (4,)), fake_array(7016, (4,), (4,)), fake_array(64, (2, 3), (12, 4))]
    with pytest.raises(HFuseError, match="differ from the tuner's .* at array #2"):
        inputs_from_recipe(_Recipe(other), layout)
