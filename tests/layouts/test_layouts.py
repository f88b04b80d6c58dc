"""The layouts' rules: fused grid sizes in Python and in the C++ launch helper, names."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hfuse

from hfuse.codegen.launcher import pack_launch
from hfuse.errors import HFuseError
from hfuse.layouts import DYNAMIC, HORIZONTAL, LAYOUTS, VERTICAL, Dynamic, layout_of
from hfuse.layouts.dynamic import SM_SLOTS, counters_name
from hfuse.spec import Dim3, KernelSpec
from hfuse.partition import Placement


def test_seven_layouts_by_name():
    assert list(LAYOUTS) == ["horizontal", "vertical", "interblock", "interleaved", "dynamic", "persistent", "spatial"]
    with pytest.raises(HFuseError, match="known: horizontal, vertical, interblock, interleaved, dynamic, persistent, spatial"):
        layout_of("diagonal")


def test_a_layout_is_a_value_written_as_its_spec():
    assert layout_of("horizontal") == HORIZONTAL and layout_of(VERTICAL) is VERTICAL
    ratio = layout_of("dynamic:2:1")
    assert ratio == Dynamic((2, 1)) and hash(ratio) == hash(Dynamic((2, 1))) and ratio != DYNAMIC
    assert ratio.spec == "dynamic:2:1" and layout_of(ratio.spec) == ratio and DYNAMIC.spec == "dynamic"
    with pytest.raises(HFuseError, match="takes no parameters"):
        layout_of("vertical:2")
    with pytest.raises(HFuseError, match="whole numbers"):
        layout_of("dynamic:two:1")
    with pytest.raises(HFuseError, match="from 1 to 64"):
        layout_of("dynamic:0:1")


def test_each_layout_places_its_parts_threads():
    placements = {name: layout.placement for name, layout in LAYOUTS.items()}
    assert placements == {"horizontal": Placement.SIDE_BY_SIDE, "vertical": Placement.FROM_ZERO,
                          "interblock": Placement.FROM_ZERO, "interleaved": Placement.FROM_ZERO,
                          "dynamic": Placement.FROM_ZERO, "persistent": Placement.FROM_ZERO,
                          "spatial": Placement.FROM_ZERO}
    for layout in LAYOUTS.values():
        fused = hfuse.fuse([KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)],
                           sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B}, layout=layout)
        assert [p.offset for p in fused.parts] == ([0, 128] if layout is HORIZONTAL else [0, 0])
        assert fused.block == Dim3(192 if layout is HORIZONTAL else 128)


def test_interblock_grids_add_up_and_the_others_take_the_largest():
    assert [l.blocks_add_up for l in LAYOUTS.values()] == [False, False, True, True, True, True, True]
    grids = [Dim3(10, 2), Dim3(7)]
    assert pack_launch(256, [[], []], grids, [0, 0], blocks_add_up=True).grid == Dim3(27)
    assert pack_launch(256, [[], []], grids, [0, 0]).grid == Dim3(20)
    # the hidden words are each part's own grid and shared-memory offset, whatever the layout
    words = pack_launch(256, [[np.int32(1)], []], grids, [0, 0], blocks_add_up=True).args
    assert [int(w) for w in words[1:]] == [10, 2, 1, 0, 7, 1, 1, 0]


def test_the_cpp_launch_helper_counts_blocks_the_same_way():
    fused = hfuse.fuse([KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)],
                       sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B}, layout="interblock")
    assert "hf_blocks += hf_blocks1;" in fused.source and "hf_blocks += hf_blocks2;" in fused.source
    assert fused.block == Dim3(128) and fused.pack([[], []], [Dim3(3), Dim3(4)], [0, 0]).grid == Dim3(7)
    horizontal = hfuse.fuse([KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)],
                            sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B})
    assert "if (hf_blocks1 > hf_blocks) hf_blocks = hf_blocks1;" in horizontal.source


def test_dynamic_dispatch_claims_a_part_block_per_fused_block():
    specs = [KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)]
    fused = hfuse.fuse(specs, sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B}, layout="dynamic:3:1")
    source, counters = fused.source, counters_name(fused.name)
    assert fused.name == "a_b__dfused" and "dynamic:3:1 fusion" in source
    assert f"__device__ unsigned int {counters}[{SM_SLOTS + 3}];" in source
    kernel = source.split(f"__device__ unsigned int {counters}")[1]
    # the SM's ticket, the ratio, one claim per part at most, then the reset by the last claimant
    assert "%%smid" in kernel and "const unsigned hf_weights[2] = {3u, 1u};" in kernel and "% 4u;" in kernel
    assert kernel.count("atomicAdd(") == 3 and "gridDim.x * gridDim.y * gridDim.z - 1u" in kernel
    assert kernel.index("__threadfence()") < kernel.index(f"atomicAdd(&{counters}[{SM_SLOTS + 2}u]")
    assert kernel.count("__syncthreads()") == 1 and kernel.index("__syncthreads()") < kernel.index("if (hf_part == 0u)")
    # the fused grid has a block per part block, as in the other inter-block layouts
    assert fused.pack([[], []], [Dim3(3), Dim3(4)], [0, 0]).grid == Dim3(7)
    assert "hf_blocks += hf_blocks2;" in source


def test_dynamic_weights_must_match_the_kernels():
    specs = [KernelSpec(Path("a.cu"), "a", 128), KernelSpec(Path("b.cu"), "b", 64)]
    with pytest.raises(HFuseError, match="dynamic:1:1:2 has 3 weight\\(s\\) for 2 fused kernels"):
        hfuse.fuse(specs, sources={"a.cu": KERNEL_A, "b.cu": KERNEL_B}, layout="dynamic:1:1:2")


KERNEL_A = "__global__ void a() { }\n"
KERNEL_B = "__global__ void b() { }\n"


def test_a_part_alone_in_its_fused_block_synchronises_with_the_blocks_own_barrier():
    # barrier id 0: __syncthreads(), which threads that exit release (partition.WHOLE_BLOCK_BARRIER);
    # so any number of kernels with barriers may share an inter-block fusion
    from hfuse.partition import WHOLE_BLOCK_BARRIER, make_partition
    from hfuse.frontend.model import Function

    kernels = [Function(name=f"k{i}", kind="global", file=Path("k.cu"), line=1, text="", params=()) for i in range(17)]
    specs = [KernelSpec("k.cu", f"k{i}", Dim3(64)) for i in range(17)]
    partition = make_partition(specs, kernels, [True] * 17, Placement.FROM_ZERO, whole_blocks=True)
    assert {p.barrier_id for p in partition.parts} == {WHOLE_BLOCK_BARRIER} == {0}
    with pytest.raises(HFuseError, match="more than 15 fused kernels use barriers"):
        make_partition(specs, kernels, [True] * 17, Placement.FROM_ZERO)
