"""Code generation: the fused ``.cu`` file from the rewritten parts."""
