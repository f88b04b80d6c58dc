"""Tools for testing hfuse itself: random kernels for differential testing (``fuzz``)."""
