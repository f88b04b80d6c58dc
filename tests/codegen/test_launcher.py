"""Where each part's slice of dynamic shared memory starts, how much the fused launch asks, and
the names of what hfuse adds for each part."""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.codegen.launcher import smem_offsets
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from toolchain import compile_nvcc


def test_slices_start_on_16_bytes_by_default():
    assert smem_offsets([100, 64, 0, 8]) == ([0, 112, 176, 176], 192)


def test_a_slice_that_asks_for_more_starts_there():
    # 100 bytes, then an __align__(128) array, then a plain one
    assert smem_offsets([100, 256, 4], [16, 128, 16]) == ([0, 128, 384], 400)
    assert smem_offsets([0, 256], [16, 1024]) == ([0, 0], 256)  # an empty slice moves nothing


@pytest.mark.nvcc
@pytest.mark.parametrize("layout", ["horizontal", "interblock"])
def test_what_hfuse_adds_for_a_part_never_takes_a_parameters_name(tmp_path, layout):
    # mmcv's dynamic_voxelize_kernel(..., const int grid_x, const int grid_y, const int grid_z, ...):
    # the user's grid_x became hf2_grid_x, the name of the part's grid too: "duplicate parameter name"
    path = tmp_path / "names.cu"
    path.write_text("__global__ void k(float* out, int grid_x, int grid_y, int grid_z, unsigned smem, int blocks,\n"
                    "                  int grid, int dynamic_smem, int, float arg1) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  out[i] = arg1 + grid_x + grid_y + grid_z + smem + blocks + grid + dynamic_smem;\n"
                    "}\n")
    partner = KernelSpec(C.CORPUS / "styles" / "partner.cu", "axpy", Dim3(96))
    fused = fuse([partner, KernelSpec(path, "k", Dim3(128))], layout=layout)
    assert "unsigned hf_grid_x2" in fused.source and "int hf2_grid_x" in fused.source
    assert "hf_arg2_8" in fused.source  # (the unnamed one)
    compile_nvcc(fused.source, workdir=tmp_path)  # the kernel and its C++ launch helper
