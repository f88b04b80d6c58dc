"""The spatial split on the CPU: the persistent kernel with each SM's preferred kernel
chosen by its position among the SMs, written spatial:PERCENT[:BLOCKS]."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import hfuse
from hfuse.errors import HFuseError
from hfuse.layouts import SPATIAL, Spatial, layout_of
from hfuse.spec import Dim3, KernelSpec

from layouts.test_persistent import SOURCES


def fused(layout="spatial:30", kernels=("stream", "arith")):
    specs = [KernelSpec(Path(f"{k}.cu"), k, 128 if k == "stream" else 256) for k in kernels]
    return hfuse.fuse(specs, sources=SOURCES, layout=layout)


def test_a_spatial_split_is_a_value_written_as_its_spec():
    assert layout_of("spatial") == SPATIAL == Spatial(percent=50) and SPATIAL.spec == "spatial:50"
    assert layout_of("spatial:30:4") == Spatial(percent=30, blocks=4) and layout_of("spatial:30:4").spec == "spatial:30:4"
    assert layout_of("spatial:30").blocks_per_sm(2) == 2 and layout_of("spatial:30:4").grid_limit(2, 132) == 528
    assert [v.spec for v in layout_of("spatial:30").variants(2, 256)] == ["spatial:20", "spatial:40"]
    assert [v.spec for v in layout_of("spatial:5").variants(2, 256)] == ["spatial:15"]
    for bad in ("spatial:0", "spatial:100", "spatial:30:0", "spatial:x", "spatial:1:2:3"):
        with pytest.raises(HFuseError):
            layout_of(bad)
    with pytest.raises(HFuseError, match="by name"):  # positionally it would be the inherited mix
        Spatial(30)


def test_each_sm_prefers_the_kernel_its_place_among_the_sms_says():
    source = fused().source
    assert "stream_arith__sfused" in source and "spatial:30 fusion" in source
    assert "%%nsmid" in source and "hf_first = hf_sm * 100u < 30u * hf_sms ? 0u : 1u;" in source
    assert "hf_mix" not in source  # no tickets: the SM decides
    # then the same claim loop as the persistent layout: its part first, then the other's
    kernel = source[source.index("for (;;)"):]
    assert "(hf_first + hf_try) % 2u" in kernel and kernel.count("__syncthreads()") == 2


def test_a_split_is_between_two_kernels():
    with pytest.raises(HFuseError, match="between two kernels, not 3"):
        fused(kernels=("stream", "arith", "stream"))


@pytest.mark.nvcc
def test_nvcc_compiles_it(tmp_path):
    path = fused("spatial:70:4").write(tmp_path / "fused.cu")
    done = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / "fused.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "hf_sms * 4ull" in path.read_text()  # the launch helper's grid: SMs x 4


def test_the_tuner_gets_an_even_split_of_two_kernels():
    specs = [KernelSpec(Path("a.cu"), "a", 256), KernelSpec(Path("b.cu"), "b", 256)]
    assert [p.layout.spec for p in SPATIAL.propose(specs)] == ["spatial:50"]
    assert SPATIAL.propose(specs + specs[:1]) == []
    assert Dim3(256) in SPATIAL.propose(specs)[0].blocks


def test_a_solo_split_measures_and_is_never_a_fusion():
    # each kernel on its own share only: what measuring a kernel on part of the SMs needs,
    # and what could leave blocks undone, so text never asks for it
    with pytest.raises(HFuseError, match="for measuring a kernel on part of the SMs"):
        layout_of("spatial:30:2:solo")
    solo = fused(Spatial(percent=30, solo=True)).source
    assert "its part only" in solo and "else the next with blocks left" not in solo
    assert "else the next with blocks left" in fused("spatial:30").source
