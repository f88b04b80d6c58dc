"""hfuse: horizontal fusion of independent CUDA kernels."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import HFuseError  # noqa: E402
from .spec import Dim3, KernelSpec  # noqa: E402
from .launch import KernelLaunch, Output  # noqa: E402
from .tune.regcap import RegisterCap  # noqa: E402
from .api import FusedKernel, FusedLaunch, fuse  # noqa: E402

__all__ = ["Dim3", "FusedKernel", "FusedLaunch", "HFuseError", "KernelLaunch", "KernelSpec", "Output", "RegisterCap", "fuse", "__version__"]
