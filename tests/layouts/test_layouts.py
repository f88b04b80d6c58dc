"""The layouts' rules: fused grid sizes in Python and in the C++ launch helper, names."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hfuse

from hfuse.codegen.launcher import pack_launch
from hfuse.errors import HFuseError
from hfuse.layouts import LAYOUTS, layout_of
from hfuse.spec import Dim3, KernelSpec


def test_four_layouts_by_name():
    assert list(LAYOUTS) == ["horizontal", "vertical", "interblock", "interleaved"]
    with pytest.raises(HFuseError, match="known: horizontal, vertical, interblock, interleaved"):
        layout_of("diagonal")


def test_interblock_grids_add_up_and_the_others_take_the_largest():
    assert [l.blocks_add_up for l in LAYOUTS.values()] == [False, False, True, True]
    grids = [Dim3(10, 2), Dim3(7)]
    assert pack_launch(256, [[], []], grids, [0, 0], blocks_add_up=True).grid == Dim3(27)
    assert pack_launch(256, [[], []], grids, [0, 0]).grid == Dim3(20)
    # the hidden words are each part's own grid and shared-memory offset, whatever the layout
    words = pack_launch(256, [[np.int32(1)], []], grids, [0, 0], blocks_add_up=True).args
    assert [int(w) for w in words[1:]] == [10, 2, 1, 0, 7, 1, 1, 0]


def test_the_cpp_launch_helper_counts_blocks_the_same_way():
    fused = hfuse.fuse([KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)],
                       sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B}, strategy="interblock")
    assert "hf_blocks += hf1_blocks;" in fused.source and "hf_blocks += hf2_blocks;" in fused.source
    assert fused.block == Dim3(128) and fused.pack([[], []], [Dim3(3), Dim3(4)], [0, 0]).grid == Dim3(7)
    horizontal = hfuse.fuse([KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)],
                            sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B})
    assert "if (hf1_blocks > hf_blocks) hf_blocks = hf1_blocks;" in horizontal.source


KERNEL_A = "__global__ void a() { }\n"
KERNEL_B = "__global__ void b() { }\n"
