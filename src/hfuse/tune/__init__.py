"""Tuning: candidates, register caps, the search on the GPU, plans and their cache."""
from .plan import Plan, load_plan
from .regcap import RegisterCap

__all__ = ["Plan", "RegisterCap", "TuneSettings", "load_plan", "tune"]


def __getattr__(name: str):
    # The search imports the compiler and runtime; keep ``import hfuse.tune`` light.
    if name in ("tune", "TuneSettings"):
        from . import tuner

        return getattr(tuner, name)
    raise AttributeError(name)
