"""Where each part's slice of dynamic shared memory starts, and how much the fused launch asks."""
from __future__ import annotations

from hfuse.codegen.launcher import smem_offsets


def test_slices_start_on_16_bytes_by_default():
    assert smem_offsets([100, 64, 0, 8]) == ([0, 112, 176, 176], 192)


def test_a_slice_that_asks_for_more_starts_there():
    # 100 bytes, then an __align__(128) array, then a plain one
    assert smem_offsets([100, 256, 4], [16, 128, 16]) == ([0, 128, 384], 400)
    assert smem_offsets([0, 256], [16, 1024]) == ([0, 0], 256)  # an empty slice moves nothing
