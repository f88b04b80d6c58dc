"""hfuse: horizontal fusion of independent CUDA kernels."""
from __future__ import annotations

from .version import __version__  # noqa: E402
from .errors import HFuseError  # noqa: E402
from .spec import Dim3, KernelSpec  # noqa: E402
from .launch import KernelLaunch, Output  # noqa: E402
from .registers import RegisterCap, WarpgroupRegisters  # noqa: E402
from .frontend.options import CompileOptions  # noqa: E402
from .fusion import Fusion  # noqa: E402
from .api import DeviceSource, FusedKernel, FusedLaunch, PreparedUnit, device_source, fuse, prepare  # noqa: E402


def tune(launches, settings=None, **kwargs):
    """Tune the fusion of ``launches`` on this GPU; see ``hfuse.tuning.tuner.tune``."""
    from .tuning.tuner import TuneSettings, tune as _tune

    return _tune(launches, settings or TuneSettings(), **kwargs)


def verify(kernels, fusion, launches=None, **kwargs):
    """Run ``fusion`` of ``kernels`` once beside the originals on this GPU and compare every
    output bit for bit (on ``launches``, or generated inputs); see ``hfuse.tuning.verify``."""
    from .tuning.verify import verify as _verify

    return _verify(kernels, fusion, launches, **kwargs)


def __getattr__(name: str):
    # Plans belong to the tuner: ``import hfuse`` (and ``hfuse fuse``) stays out of it.
    if name in ("Plan", "load_plan"):
        from .tuning import plan

        return getattr(plan, name)
    raise AttributeError(f"module 'hfuse' has no attribute {name!r}")


__all__ = [
    "CompileOptions", "DeviceSource", "Dim3", "Fusion", "FusedKernel", "FusedLaunch", "HFuseError", "KernelLaunch", "KernelSpec",
    "Output", "Plan", "PreparedUnit", "RegisterCap", "WarpgroupRegisters", "__version__", "device_source", "fuse",
    "launcher", "load_plan", "plan_table", "prepare", "tune", "verify",
]
