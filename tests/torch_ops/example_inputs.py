"""The example model's two kernels (examples/torch/kernels.cu) and random inputs for them,
shared by the GPU tests, the example and the launch-overhead benchmark."""
from __future__ import annotations

from pathlib import Path

from hfuse.spec import Dim3

KERNELS_CU = Path(__file__).resolve().parents[2] / "examples" / "torch" / "kernels.cu"


def bag_grid(args, block: Dim3) -> Dim3:
    """One warp per bag, at most 8 blocks per SM's worth (grid-stride beyond)."""
    return Dim3(max(1, min(132 * 8, (int(args[4]) * 32 + block.size - 1) // block.size)))


def hash_grid(args, block: Dim3) -> Dim3:
    return Dim3(max(1, min(132 * 8, (int(args[2]) + block.size - 1) // block.size)))


def make_kernels(block: int = 128):
    from hfuse.torch import torch_kernel

    return [torch_kernel(KERNELS_CU, "embedding_bag_sum", block, outputs=[3], grid=bag_grid),
            torch_kernel(KERNELS_CU, "feature_hash", block, outputs=[1], grid=hash_grid)]


def make_args(torch, seed: int, *, rows: int = 1 << 20, dim: int = 64, bags: int = 1 << 14, bag_len: int = 32,
              n: int = 1 << 20, buckets: int = 1 << 20, device: str = "cuda"):
    """Fresh random arguments for the two kernels (outputs filled with garbage, not zeros)."""
    g = torch.Generator(device=device).manual_seed(seed)
    table = torch.randn(rows, dim, device=device, generator=g)
    indices = torch.randint(0, rows, (bags * bag_len,), device=device, generator=g, dtype=torch.int64)
    offsets = torch.arange(0, bags * bag_len + 1, bag_len, device=device, dtype=torch.int64)
    out = torch.randn(bags, dim, device=device, generator=g)
    keys = torch.randint(-(1 << 31), 1 << 31, (n,), device=device, generator=g, dtype=torch.int64).to(torch.int32)
    hashed = torch.randint(0, 7, (n,), device=device, generator=g, dtype=torch.int32)
    return [[table, indices, offsets, out, bags, dim], [keys, hashed, n, 0x9E3779B9, buckets]]
