"""Front end: preprocess CUDA sources, parse them, build the kernel model."""
