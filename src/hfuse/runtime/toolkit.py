"""Where the CUDA toolkit's command-line tools are (ncu, compute-sanitizer, ...)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def find_cuda_tool(name: str) -> str | None:
    """``name`` on ``PATH``, else in ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin`` or ``/usr/local/cuda/bin``."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / name).is_file():
            return str(Path(root) / "bin" / name)
    return None
