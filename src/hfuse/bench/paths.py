"""Where results go: one folder per GPU model, named after it (``bench/results/h100``)."""
from __future__ import annotations

import re
from pathlib import Path

RESULTS_ROOT = Path("bench/results")


def gpu_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100'; 'NVIDIA H200' -> 'h200'; else a safe lower-case name."""
    match = re.search(r"\b([A-Z]+\d{2,4}[A-Za-z]?)\b", name.replace("NVIDIA", ""))
    token = match.group(1) if match else name
    return re.sub(r"[^a-z0-9]+", "-", token.lower()).strip("-") or "gpu"


def default_results_dir() -> Path:
    """``bench/results/<this GPU>``; needs a GPU."""
    from ..runtime.device import DeviceLimits

    return RESULTS_ROOT / gpu_slug(DeviceLimits.current().name)
