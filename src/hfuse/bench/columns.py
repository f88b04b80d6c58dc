"""Results columns measured beside a tuned point, each allowed to fail without losing the
row: the PyTorch user's torch.compile with combo kernels, and the co-location bound."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .speedup import speedup_pct


def measured_or_said(row: dict[str, Any], error_column: str, console: Any, what: str,
                     fill: Callable[..., dict[str, Any]], *args: Any) -> None:
    """``fill(*args)``'s columns into ``row``; if it fails, ``error_column`` says why."""
    try:
        row.update(fill(*args))
    except Exception as exc:
        first = next(iter(str(exc).splitlines()), "")
        row[error_column] = f"unmeasured: {type(exc).__name__}: {first}"
        if console is not None:
            console.print(f"  [yellow]{what} failed:[/] {row[error_column]}")


def compiled_columns(kinds: Sequence[str], launches: Sequence[Any], settings: Any,
                     native_ms: float | None) -> dict[str, Any]:
    """The two operators under torch.compile with Inductor's combo kernels (``torch_baseline``)."""
    from .torch_baseline import time_torch_compiled_pair

    ms = time_torch_compiled_pair(kinds, launches, warmup_ms=settings.warmup_ms, rep_ms=settings.rep_ms,
                                  flush_l2=settings.flush_l2)["compiled"].median_ms
    return {"torch_compile_ms": ms, "speedup_torch_compile": speedup_pct(native_ms, ms)}


def colocation_columns(launches: Sequence[Any], best_unfused_ms: float | None, tuned_ms: float | None) -> dict[str, Any]:
    """The point's co-location bound, measured from the kernels' curves (``colocation``)."""
    from .colocation import bound_fields, colocation_bound

    return bound_fields(colocation_bound(launches), best_unfused_ms, tuned_ms)
