"""GPU runtime: device limits, NVRTC compilation, occupancy, execution and timing.

Importing this package needs no GPU; CuPy is imported only by calls that need it.
"""
from .device import DeviceLimits, require_gpu
from .occupancy import Occupancy, occupancy
from .ptxas import Resources, nvcc_resources, parse_ptxas

__all__ = ["DeviceLimits", "Occupancy", "Resources", "nvcc_resources", "occupancy", "parse_ptxas", "require_gpu"]
