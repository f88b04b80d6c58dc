"""The real-world CUDA corpus (see manifest.py)."""
