"""Tuning: candidates, register caps, the search on the GPU, plans and their cache."""
from .plan import Plan, load_plan

__all__ = ["Plan", "TuneSettings", "load_plan", "tune"]


def __getattr__(name: str):
    # The search imports the compiler and runtime; keep ``import hfuse.tuning`` light.
    if name in ("tune", "TuneSettings"):
        from . import tuner

        return getattr(tuner, name)
    raise AttributeError(name)
