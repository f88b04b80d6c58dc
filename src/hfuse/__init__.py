"""hfuse: horizontal fusion of independent CUDA kernels."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import HFuseError  # noqa: E402
from .spec import Dim3, KernelSpec  # noqa: E402
from .launch import KernelLaunch, Output  # noqa: E402
from .tune.regcap import RegisterCap, WarpgroupRegisters  # noqa: E402
from .frontend.options import CompileOptions  # noqa: E402
from .api import DeviceSource, FusedKernel, FusedLaunch, PreparedUnit, device_source, fuse, prepare  # noqa: E402
from .tune.plan import Plan, load_plan  # noqa: E402


def tune(launches, settings=None, **kwargs):
    """Tune the fusion of ``launches`` on this GPU; see ``hfuse.tune.tuner.tune``."""
    from .tune.tuner import TuneSettings, tune as _tune

    return _tune(launches, settings or TuneSettings(), **kwargs)

__all__ = [
    "CompileOptions", "DeviceSource", "Dim3", "FusedKernel", "FusedLaunch", "HFuseError", "KernelLaunch", "KernelSpec",
    "Output", "Plan", "PreparedUnit", "RegisterCap", "WarpgroupRegisters", "__version__", "device_source", "fuse",
    "load_plan", "prepare", "tune",
]
