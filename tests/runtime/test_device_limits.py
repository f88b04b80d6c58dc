"""DeviceLimits built explicitly (no hidden defaults for the SM numbers)."""
from __future__ import annotations

import pytest

from hfuse.errors import GPUUnavailableError
from hfuse.runtime.device import DeviceLimits, _version_text, require_gpu

from .test_occupancy import H100, VOLTA


def test_derived_values():
    assert H100.arch == "sm_90" and VOLTA.arch == "sm_70"
    assert H100.max_warps_per_sm == 64
    assert H100.smem_alloc_unit == 128 and VOLTA.smem_alloc_unit == 256


def test_round_trip():
    assert DeviceLimits.from_dict(H100.to_dict()) == H100


def test_sm_numbers_are_required():
    with pytest.raises(TypeError):
        DeviceLimits(name="x", compute_capability=(9, 0))  # type: ignore[call-arg]


def test_version_text():
    assert _version_text(13000) == "13.0" and _version_text(12040) == "12.4"


def test_require_gpu_says_why():
    try:
        import cupy  # noqa: F401
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if has_gpu:
        pytest.skip("a GPU is present")
    with pytest.raises(GPUUnavailableError) as info:
        require_gpu()
    assert "CuPy" in str(info.value) or "GPU" in str(info.value)
