"""Tuning: candidates, register caps, plans and their cache (the search loop comes later)."""
from .regcap import RegisterCap

__all__ = ["RegisterCap"]
