"""hfuse for PyTorch: fused kernels as custom ops (optional; needs torch).

``import hfuse`` never imports torch. ``TorchKernel``, ``torch_kernel`` and
``kernel_params`` (``kernels``) and the parameter mapping (``params``) are plain Python;
``fused_op`` and ``FusedOp`` (``op``) import torch on first use.
"""
from __future__ import annotations

from typing import Any

from .kernels import TorchKernel, kernel_params, torch_kernel

__all__ = ["FusedOp", "TorchKernel", "fused_op", "kernel_params", "torch_kernel"]


def __getattr__(name: str) -> Any:
    if name not in ("FusedOp", "fused_op"):
        raise AttributeError(f"module 'hfuse.torch' has no attribute {name!r}")
    try:
        from . import op
    except ImportError as exc:
        if exc.name != "torch":
            raise
        raise ImportError("hfuse.torch needs PyTorch: pip install torch (a CUDA build)") from exc
    return getattr(op, name)
