"""What the GPU can hold: the SM limits the occupancy and register-cap arithmetic needs.

Every number is read from the device through CuPy's attribute API when a GPU is there
(``DeviceLimits.current()``); nothing falls back to a hard-coded Pascal/Volta/Hopper
table, because a silently wrong limit gives a silently wrong register cap. Tests build a
``DeviceLimits`` with the numbers written out explicitly.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import GPUUnavailableError

# cudaDeviceAttr enum values (driver_types.h). They are part of CUDA's ABI and stable;
# asking by number avoids depending on how a CuPy version names its attribute dict.
_ATTR = {
    "max_threads_per_block": 1,
    "smem_per_block": 8,
    "warp_size": 10,
    "regs_per_block": 12,
    "clock_khz": 13,
    "sm_count": 16,
    "memory_clock_khz": 36,
    "l2_bytes": 38,
    "max_threads_per_sm": 39,
    "cc_major": 75,
    "cc_minor": 76,
    "smem_per_sm": 81,
    "regs_per_sm": 82,
    "smem_per_block_optin": 97,
    "max_blocks_per_sm": 106,
    "reserved_smem_per_block": 111,
}


@dataclass(frozen=True, kw_only=True)
class DeviceLimits:
    """Per-SM and per-block limits of one GPU (bytes for memory, counts otherwise)."""

    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    regs_per_sm: int
    regs_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_sm: int
    smem_per_block_optin: int
    max_threads_per_block: int = 1024
    smem_per_block: int = 48 * 1024
    """Dynamic + static shared memory a block gets without opting in (48 KiB everywhere)."""
    reserved_smem_per_block: int = 0
    """Shared memory the driver keeps per block (1 KiB on sm_80+; 0 before)."""
    warp_size: int = 32
    reg_alloc_unit: int = 256
    """Registers are given to a warp in units of this many (256 on every arch since sm_30)."""
    max_regs_per_thread: int = 255
    l2_bytes: int = 0
    driver_version: str = ""
    runtime_version: str = ""
    clock_khz: int | None = None
    memory_clock_khz: int | None = None
    device_index: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "compute_capability", tuple(int(v) for v in self.compute_capability))

    @property
    def arch(self) -> str:
        """NVRTC/nvcc real architecture, e.g. ``sm_90``."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @property
    def smem_alloc_unit(self) -> int:
        """Shared memory is given to a block in units of this many bytes.

        NVIDIA's occupancy calculator (cuda_occupancy.h) uses 256 up to sm_7x and 128
        from sm_80 on; it is an architectural constant, not a device attribute.
        """
        return 256 if self.compute_capability[0] < 8 else 128

    @property
    def sub_partitions(self) -> int:
        """Register file partitions per SM (4 since Volta; GP100 has 2)."""
        major, minor = self.compute_capability
        return 2 if (major, minor) == (6, 0) else 4

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["compute_capability"] = list(self.compute_capability)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DeviceLimits":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def current(cls, device: int | None = None) -> "DeviceLimits":
        """Reads the limits of ``device`` (default: CuPy's current device)."""
        cupy = require_gpu()
        runtime = cupy.cuda.runtime
        index = runtime.getDevice() if device is None else int(device)

        def attr(key: str) -> int:
            return int(runtime.deviceGetAttribute(_ATTR[key], index))

        def optional(key: str) -> int | None:
            # Clock attributes are deprecated in CUDA 13; a driver may refuse them.
            try:
                value = attr(key)
            except Exception:
                return None
            return value if value > 0 else None

        props = runtime.getDeviceProperties(index)
        name = props.get("name", b"")
        name = name.decode(errors="replace") if isinstance(name, (bytes, bytearray)) else str(name)
        return cls(
            name=name.rstrip("\x00").strip(),
            compute_capability=(attr("cc_major"), attr("cc_minor")),
            sm_count=attr("sm_count"),
            regs_per_sm=attr("regs_per_sm"),
            regs_per_block=attr("regs_per_block"),
            max_threads_per_sm=attr("max_threads_per_sm"),
            max_blocks_per_sm=attr("max_blocks_per_sm"),
            smem_per_sm=attr("smem_per_sm"),
            smem_per_block_optin=attr("smem_per_block_optin"),
            max_threads_per_block=attr("max_threads_per_block"),
            smem_per_block=attr("smem_per_block"),
            reserved_smem_per_block=attr("reserved_smem_per_block"),
            warp_size=attr("warp_size"),
            l2_bytes=attr("l2_bytes"),
            driver_version=_driver_release(index) or f"CUDA {_version_text(runtime.driverGetVersion())}",
            runtime_version=_version_text(runtime.runtimeGetVersion()),
            clock_khz=optional("clock_khz"),
            memory_clock_khz=optional("memory_clock_khz"),
            device_index=index,
        )


def _driver_release(index: int) -> str | None:
    """The driver's own release ('580.159.04', what nvidia-smi shows), with its CUDA level.

    NVML (nvidia-ml-py) when installed, else nvidia-smi; None when neither answers.
    """
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            release = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        release = release.decode() if isinstance(release, bytes) else str(release)
    except Exception:
        import subprocess

        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"--id={index}"],
                                 capture_output=True, text=True, timeout=10)
            release = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
        except (OSError, subprocess.SubprocessError):
            release = ""
    if not release:
        return None
    try:
        import cupy

        return f"{release} (CUDA {_version_text(cupy.cuda.runtime.driverGetVersion())})"
    except Exception:
        return release


def _version_text(code: int) -> str:
    """CUDA encodes versions as 1000*major + 10*minor (13000 -> '13.0')."""
    code = int(code)
    return f"{code // 1000}.{(code % 1000) // 10}"


def require_gpu() -> Any:
    """Returns the ``cupy`` module when a CUDA GPU is usable, else raises why not."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CuPy that cannot find libcuda
        raise GPUUnavailableError(
            f"CuPy cannot be imported ({type(exc).__name__}: {exc})",
            hint="install the GPU extra (pip install 'hfuse[gpu]', i.e. cupy-cuda13x) on a machine with a CUDA GPU",
        ) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise GPUUnavailableError(
            f"no usable CUDA driver or GPU ({type(exc).__name__}: {exc})",
            hint="check nvidia-smi; tuning and benchmarking need a GPU, fusing does not",
        ) from exc
    if count < 1:
        raise GPUUnavailableError("no CUDA GPU is visible", hint="check CUDA_VISIBLE_DEVICES and nvidia-smi")
    return cupy
