"""Shared test fixtures: where nvcc, NVRTC and a GPU are (or are not)."""
from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI") == "true"


def _gpu_reason() -> str | None:
    """None when a CUDA GPU is usable through CuPy, else why not."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install
        return f"CuPy is not importable ({type(exc).__name__}): GPU tests need a CUDA GPU and CuPy"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU visible"
    except Exception as exc:
        return f"no usable CUDA GPU ({exc})"
    return None


def _nvrtc_reason() -> str | None:
    """None when NVRTC loads through CuPy (it needs no GPU), else why not."""
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # ImportError, or no libnvrtc
        return f"NVRTC is not loadable through CuPy ({type(exc).__name__}: {exc}); pip install -e '.[test]'"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_reason = _gpu_reason() if any("gpu" in i.keywords for i in items) else None
    nvrtc_reason = _nvrtc_reason() if any("nvrtc" in i.keywords for i in items) else None
    nvcc_missing = shutil.which("nvcc") is None
    for item in items:
        if "gpu" in item.keywords and gpu_reason:
            item.add_marker(pytest.mark.skip(reason=gpu_reason))
        if "nvcc" in item.keywords and nvcc_missing and not IN_CI:
            # In CI nvcc is installed by contract: a missing one must fail, not skip.
            item.add_marker(pytest.mark.skip(reason="nvcc is not on PATH"))
        if "nvrtc" in item.keywords and nvrtc_reason and not IN_CI:
            # The test extra installs CuPy and NVRTC: in CI a missing one must fail, not skip.
            item.add_marker(pytest.mark.skip(reason=nvrtc_reason))
