"""Speedup as the paper reports it."""
from __future__ import annotations


def speedup_pct(native_ms: float | None, method_ms: float | None) -> float | None:
    """(native / method - 1) * 100: the paper's "speedup over native" in percent."""
    if native_ms is None or method_ms is None or method_ms <= 0 or native_ms <= 0:
        return None
    return (native_ms / method_ms - 1.0) * 100.0
