"""The benchmark's environment: when, on which clocks, and a clean GPU memory pool between points."""
from __future__ import annotations

import datetime as _dt
import gc
import subprocess
from typing import Any


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def nvidia_smi_clocks() -> dict[str, Any]:
    """Current and maximum clocks (MHz) and power limit from nvidia-smi, if it answers."""
    query = "clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return {}
    if out.returncode != 0 or not out.stdout.strip():
        return {}
    values = [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]
    return dict(zip(["sm_mhz", "mem_mhz", "max_sm_mhz", "max_mem_mhz", "power_limit_w", "persistence_mode"], values))


def free_gpu_memory() -> None:
    gc.collect()
    try:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:
        pass
    try:
        import sys

        if "torch" in sys.modules:
            sys.modules["torch"].cuda.empty_cache()
    except Exception:
        pass
