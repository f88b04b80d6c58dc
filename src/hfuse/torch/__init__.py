"""hfuse for PyTorch: fused kernels as custom ops (optional; needs torch).

``import hfuse`` never imports torch. The names below import it on first use (``op``);
``hfuse.torch.params``, the parameter mapping, is plain Python.
"""
from __future__ import annotations

from typing import Any

__all__ = ["FusedOp", "TorchKernel", "fused_op", "kernel_params", "torch_kernel"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'hfuse.torch' has no attribute {name!r}")
    try:
        from . import op
    except ImportError as exc:
        if exc.name != "torch":
            raise
        raise ImportError("hfuse.torch needs PyTorch: pip install torch (a CUDA build)") from exc
    return getattr(op, name)
