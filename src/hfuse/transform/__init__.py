"""Transformations: pure functions from the kernel model (or function text) to text."""
